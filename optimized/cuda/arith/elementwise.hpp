// The elementwise ops of the CUDA backend (spec/kernels-cuda.md G4, G6): the reference's own
// operation sequences (M6, M10, M11), so on the same inputs they give the reference's bits.
#pragma once
#include "optimized/cuda/arith/hd.hpp"

namespace akv::cuda {

/// Rotates the pair (x0, x1) = (x[i], x[i + head_dim/2]) by the table's (c, s) (M6):
/// y0 = x0*c - x1*s, y1 = x0*s + x1*c, each product and sum rounded (no fma).
AKV_HD inline void rope_pair(float x0, float x1, float c, float s, float* y0, float* y1) {
  *y0 = x0 * c - x1 * s;
  *y1 = x0 * s + x1 * c;
}

/// silu(g) * u with silu(a) = a / (1 + exp(-a)), akv::exp (M10, A4).
AKV_HD inline float swiglu(float g, float u) { return (g / (1.0f + akv::exp(-g))) * u; }

/// The residual add of M11.
AKV_HD inline float residual(float x, float y) { return x + y; }

}  // namespace akv::cuda
