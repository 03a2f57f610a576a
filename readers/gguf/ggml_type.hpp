// ggml tensor types: their ids in a GGUF file and their block layouts (spec/gguf.md F4, Q2-Q5).
#pragma once
#include <cstdint>
#include <string>

namespace akv::readers {

/// A tensor's element type as a GGUF tensor info stores it (ggml's `ggml_type` numbering).
enum class TensorType : uint32_t {
  kF32 = 0, kF16 = 1, kQ4_0 = 2, kQ4_1 = 3, kQ5_0 = 6, kQ5_1 = 7, kQ8_0 = 8, kQ8_1 = 9,
  kQ2_K = 10, kQ3_K = 11, kQ4_K = 12, kQ5_K = 13, kQ6_K = 14, kQ8_K = 15,
  kIQ2_XXS = 16, kIQ2_XS = 17, kIQ3_XXS = 18, kIQ1_S = 19, kIQ4_NL = 20, kIQ3_S = 21,
  kIQ2_S = 22, kIQ4_XS = 23, kI8 = 24, kI16 = 25, kI32 = 26, kI64 = 27, kF64 = 28,
  kIQ1_M = 29, kBF16 = 30, kTQ1_0 = 34, kTQ2_0 = 35, kMXFP4 = 39,
};

/// A type's storage: `block` elements take `bytes` bytes; a row's length is a multiple of `block`.
struct TypeLayout {
  const char* name;  // "F32", "Q4_1", ...
  uint32_t block;    // elements per block
  uint32_t bytes;    // bytes per block
};

/// The layout of ggml type id `id`, or nullptr for an id this reader does not know
/// (spec/gguf.md F4: such a tensor is Error(kBadModel)).
const TypeLayout* type_layout(uint32_t id);

/// "Q4_1" for a known id, else "type 77".
std::string type_name(uint32_t id);

}  // namespace akv::readers
