// The dot product of every CUDA matmul (spec/kernels-cuda.md G2): one fused multiply-add
// chain per output, k = 0, 1, ..., n-1, from +0. The tiled GEMM kernel (device/kernels.cu)
// walks k in this order for every output it owns; no split-K.
#pragma once
#include "optimized/cuda/arith/hd.hpp"

namespace akv::cuda {

/// acc + a*b with one rounding (IEEE fma). The only way a product enters a sum in G2.
AKV_HD inline float mac(float acc, float a, float b) { return fmaf(a, b, acc); }

/// sum_k w[k] * x[k] as the chain acc = fma(w[k], x[k], acc), k ascending, acc = +0. G2.
/// w, x: (n,). n >= 0.
AKV_HD inline float dot_chain(const float* w, const float* x, int n) {
  float acc = 0.0f;
  for (int k = 0; k < n; ++k) acc = mac(acc, w[k], x[k]);
  return acc;
}

}  // namespace akv::cuda
