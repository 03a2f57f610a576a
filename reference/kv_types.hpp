// The cache types (spec/state.md S5-S8): how a session's K and V rows are stored. f32 keeps the
// float32 values; f16 and q8_0 round each row once, when it is written, to IEEE binary16 or to
// ggml's Q8_0 blocks, and attention reads the rows back by an exact conversion to float32.
// One encoder and one decoder, used by every backend: the cache bytes are a function of the
// float32 row and the type alone.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace akv {

struct Config;

/// The stored form of a cache row (S5). kF32 is the default and the only type of the kernel
/// ABI's own attention (spec/gate.md).
enum class KvType : uint8_t { kF32 = 0, kF16 = 1, kQ8_0 = 2 };

/// Elements of one Q8_0 block (S7), as ggml's QK8_0.
inline constexpr int kKvQ8Block = 32;
/// Bytes of one Q8_0 block: the fp16 scale d (little-endian) then 32 int8 quants, as ggml's block_q8_0.
inline constexpr int kKvQ8BlockBytes = 2 + kKvQ8Block;

/// "f32", "f16", "q8_0".
const char* kv_type_name(KvType t);
/// Every type's name, in enum order.
std::vector<std::string> kv_type_names();
/// The type named `name`; Error(kBadInput) naming the choices otherwise.
KvType parse_kv_type(std::string_view name);

/// Bytes of one stored row of n values: 4n, 2n, or n/32 blocks of 34 (n a multiple of 32).
size_t kv_row_bytes(KvType t, int n);

/// Error(kBadInput) when type t cannot store the rows of model config c: q8_0 needs a head_dim
/// that is a multiple of 32, so that no block holds two heads (S7). Names the model and head_dim.
void check_kv_type(KvType t, const Config& c);

/// IEEE binary16 bits of x, rounded to nearest, ties to even (S6): overflow (|x| >= 65520) gives
/// an infinity of x's sign, results below 2^-14 are binary16 subnormals (or a signed zero), and
/// a NaN gives the quiet NaN sign | 0x7e00 | (the top 10 bits of x's payload). This is what x86's
/// VCVTPS2PH computes under round-to-nearest, and numpy's astype(float16).
uint16_t float_to_half_bits(float x);

/// Stores row x (n,) as type t into out (kv_row_bytes(t, n) bytes) (S5-S7): f32 the float bytes,
/// f16 float_to_half_bits of each element, q8_0 ggml's reference quantizer per block of 32
/// (quantize_row_q8_0_ref, gguf-py's Q8_0.quantize_blocks). n is a multiple of 32 for q8_0.
void kv_encode_row(KvType t, const float* x, int n, uint8_t* out);

/// One Q8_0 block of x (32,) into out (34 bytes): amax = max |x_j| (ggml's MAX, left to right),
/// d = amax / 127, id = d != 0 ? 1 / d : 0, q_j = roundf(x_j * id) (half away from zero; a
/// non-finite or out-of-range x_j * id, which only a non-finite input or a d below 2^-128 gives,
/// stores 0), then d as float_to_half_bits. Float operations, each rounded once.
void kv_encode_q8_0_block(const float* x, uint8_t* out);

/// The float32 values of a stored row (S8): f16 exactly (half_bits_to_float), q8_0 as
/// float(q) * float(d), which is exact (|q| <= 127 and d an fp16 value: at most 18 significant
/// bits). in holds kv_row_bytes(t, n) bytes; out (n,).
void kv_decode_row(KvType t, const uint8_t* in, int n, float* out);

}  // namespace akv
