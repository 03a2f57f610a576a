// The GEMM's tiling (spec/kernels-cuda.md G2). Out (M, d) = X (M, n) @ W^T, W (d, n)
// row-major: out[m, i] = dot_chain(W row i, X row m, n). The kernel gives each block a
// kGemmBM x kGemmBN output tile and walks k in kGemmBK-wide tiles, ascending, each output's
// accumulator in one thread's registers: every output is the fma chain of dot.hpp whatever
// M, the tile sizes or the grid (no split-K, no atomics). The host emulation takes the tile
// sizes as parameters so the suite can show they do not matter.
#pragma once
#include "optimized/cuda/arith/dot.hpp"

namespace akv::cuda {

inline constexpr int kGemmBM = 64;   // rows (tokens) per block
inline constexpr int kGemmBN = 64;   // outputs per block
inline constexpr int kGemmBK = 16;   // k per shared-memory tile
inline constexpr int kGemmTM = 4;    // rows per thread
inline constexpr int kGemmTN = 4;    // outputs per thread
inline constexpr int kGemmThreads = (kGemmBM / kGemmTM) * (kGemmBN / kGemmTN);  // 256

/// Rows of one forward chunk: a call of m tokens runs as ceil(m / kMaxRows) chunks. Only
/// the scratch size depends on it, never the arithmetic (G8).
inline constexpr int kMaxRows = 2048;

}  // namespace akv::cuda
