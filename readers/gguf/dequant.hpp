// Dequantization of GGUF tensor data to IEEE binary32, bit-exact (spec/gguf.md Q1-Q5, Q7-Q9).
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "readers/gguf/gguf.hpp"

namespace akv::readers {

/// IEEE binary16 bits -> binary32 (Q1): exact for every value; subnormals normalised;
/// infinities kept; a NaN keeps its sign and payload (`payload << 13`, quiet bit not forced).
float half_to_float(uint16_t h);

/// bfloat16 bits -> binary32 (Q1): the bits `uint32(b) << 16`, exact for every pattern.
float bf16_to_float(uint16_t b);

/// Whether akv dequantizes this tensor type: F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K,
/// Q5_K, Q6_K (not Q8_K: gguf-py, the reference, has no Q8_K dequantization).
bool dequantize_supported(uint32_t type);

/// Dequantizes `out.size()` elements of ggml type `type` from `in` into `out` (Q2-Q5, Q7-Q9;
/// ggml's dequantize_row_*, gguf-py's quants.py).
/// `in` must hold exactly the bytes of out.size() elements, and out.size() must be a multiple
/// of the type's block size. Throws Error(kBadModel) naming `what` for an unsupported type or
/// a size mismatch.
void dequantize(uint32_t type, std::span<const uint8_t> in, std::span<float> out, const std::string& what);

/// One tensor of a GgufFile as float32, n_elements values in ggml order (dims[0] fastest).
/// Throws Error(kBadModel) `FILE: tensor 'NAME': ...` for an unsupported type (`file` names
/// the file; empty: the message starts at the tensor).
std::vector<float> dequantize(const TensorInfo& t, const std::string& file = "");

/// spec/gguf.md F8: throws Error(kBadModel) `WHERE[i] (row r, column c): nan: ...` naming the
/// first element of `v` that is not finite; `row_len` is the tensor's contiguous row length
/// (ggml dims[0], torch's last dim); `first` is the index of v[0] in the tensor (a tensor
/// checked in pieces). Every weight a model holds is checked at load.
void check_finite(std::span<const float> v, size_t row_len, const std::string& where, size_t first = 0);

}  // namespace akv::readers
