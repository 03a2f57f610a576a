// RMSNorm's arithmetic on the GPU (spec/kernels-cuda.md G3): one warp per row; lane t sums
// x[j]^2 for j = t, t+32, ... as an fma chain; the 32 partials are added by a fixed
// pairwise tree; then the reference's scale and product (M7).
#pragma once
#include "optimized/cuda/arith/hd.hpp"

namespace akv::cuda {

/// Lane `lane`'s partial sum of squares of x (n,): fma chain over j = lane, lane + kWarpLanes, ...
AKV_HD inline float rms_lane_partial(const float* x, int n, int lane) {
  float s = 0.0f;
  for (int j = lane; j < n; j += kWarpLanes) s = fmaf(x[j], x[j], s);
  return s;
}

/// Sums p (kWarpLanes,) by the fixed tree: for s = 16, 8, 4, 2, 1: p[t] = p[t] + p[t+s], t < s.
/// Overwrites p; returns p[0]. The same tree as a warp's shfl_down butterfly.
AKV_HD inline float tree_sum32(float* p) {
  for (int s = kWarpLanes / 2; s >= 1; s /= 2)
    for (int t = 0; t < s; ++t) p[t] = p[t] + p[t + s];
  return p[0];
}

/// 1 / sqrt(ss / n + eps), IEEE division and sqrt (M7's scale).
AKV_HD inline float rms_inv(float ss, int n, float eps) {
  return 1.0f / sqrtf(ss / static_cast<float>(n) + eps);
}

/// The sum of squares of x (n,) in G3's order: the 32 lane partials, then the tree.
AKV_HD inline float rms_sumsq(const float* x, int n) {
  float p[kWarpLanes];
  for (int t = 0; t < kWarpLanes; ++t) p[t] = rms_lane_partial(x, n, t);
  return tree_sum32(p);
}

/// out (n,) = (x * inv) * w, the reference's element order (M7). out may alias x.
AKV_HD inline float rms_apply(float x, float inv, float w) { return (x * inv) * w; }

}  // namespace akv::cuda
