// AKV_HD: __host__ __device__ under nvcc, nothing under a host compiler. The per-output
// arithmetic of every CUDA kernel is written once with it, so the CPU suite runs the kernel's
// exact operation sequence (spec/kernels-cuda.md G1).
#pragma once
#include <cmath>

#include "reference/exp.hpp"  // defines AKV_HD and the one exp (A4), device-ready

namespace akv::cuda {

/// Lanes of the RMSNorm sum-of-squares tree (G3): one warp.
inline constexpr int kWarpLanes = 32;

/// Keys per attention split (G5). Fixed, and splits start at absolute position 0, so a
/// token's splits depend only on its position, never on the call's length or the batch.
inline constexpr int kKvSplit = 64;

/// Splits covering keys [0, n_keys): ceil(n_keys / kKvSplit).
AKV_HD inline int n_splits(int n_keys) { return (n_keys + kKvSplit - 1) / kKvSplit; }

}  // namespace akv::cuda
