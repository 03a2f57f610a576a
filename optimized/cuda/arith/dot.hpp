// The dot product of every CUDA matmul (spec/kernels-cuda.md G2): the k range is cut into a
// fixed number of chunks that depends on (n, d) only (gemm.hpp: splitk_len); each chunk is one
// fused multiply-add chain, k ascending from +0, and the chunk sums are added in chunk order.
// One chunk (the whole of k) is the plain chain.
#pragma once
#include "optimized/cuda/arith/hd.hpp"

namespace akv::cuda {

/// acc + a*b with one rounding (IEEE fma). The only way a product enters a sum in G2.
AKV_HD inline float mac(float acc, float a, float b) { return fmaf(a, b, acc); }

/// sum_k w[k] * x[k] for k in [begin, end) as the chain acc = fma(w[k], x[k], acc), k
/// ascending, acc = +0. w, x: indexed from 0 (the range is the chunk's). 0 <= begin <= end.
AKV_HD inline float dot_range(const float* w, const float* x, int begin, int end) {
  float acc = 0.0f;
  for (int k = begin; k < end; ++k) acc = mac(acc, w[k], x[k]);
  return acc;
}

/// sum_k w[k] * x[k] as one chain over k = 0 .. n-1 (dot_range(w, x, 0, n)). The attention
/// scores (G5) use it; so does every matmul whose k is one chunk. w, x: (n,). n >= 0.
AKV_HD inline float dot_chain(const float* w, const float* x, int n) { return dot_range(w, x, 0, n); }

/// The chunk sums p_0 .. p_{S-1} (p_c at p[c * stride]) added in chunk order:
/// s = p_0; s = s + p_c for c = 1 .. S-1, each addition rounded. S >= 1.
AKV_HD inline float splitk_combine(const float* p, long stride, int S) {
  float s = p[0];
  for (int c = 1; c < S; ++c) s = s + p[c * stride];
  return s;
}

}  // namespace akv::cuda
