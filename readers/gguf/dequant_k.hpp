// ggml's K-quant blocks to IEEE binary32, bit-exact (spec/gguf.md Q8, Q9): super-blocks of
// QK_K = 256 elements. Internal to readers/gguf/dequant.cpp, which checks sizes and dispatches.
#pragma once
#include <cstdint>

namespace akv::readers::kquant {

/// Sub-block i (0-7) of the 12 packed scale bytes of a Q4_K / Q5_K block -> its 6-bit scale
/// `sc` and 6-bit min `m` (Q8; ggml's get_scale_min_k4, gguf-py's Q4_K.get_scale_min).
void scale_min(const uint8_t* scales, int i, int& sc, int& m);

/// One Q4_K block (144 bytes at `b`) -> 256 floats at `y` (Q8).
void q4_k(const uint8_t* b, float* y);
/// One Q5_K block (176 bytes at `b`) -> 256 floats at `y` (Q8).
void q5_k(const uint8_t* b, float* y);
/// One Q6_K block (210 bytes at `b`) -> 256 floats at `y` (Q9).
void q6_k(const uint8_t* b, float* y);

}  // namespace akv::readers::kquant
