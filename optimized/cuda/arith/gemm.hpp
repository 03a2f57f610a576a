// The GEMM's tiling (spec/kernels-cuda.md G2). Out (M, d) = X (M, n) @ W^T, W (d, n)
// row-major: out[m, i] = dot_chain(W row i, X row m, n). Every kernel variant gives each
// block a bm x bn output tile and walks k in bk-wide tiles, ascending, each output's
// accumulator in one thread's registers: every output is the fma chain of dot.hpp whatever
// M, the variant, the tile sizes or the grid (no split-K, no atomics). So the launcher may
// pick any variant for any shape (for speed) without changing a bit, and the host
// emulation takes the tile sizes as parameters so the suite can show they do not matter.
#pragma once
#include "optimized/cuda/arith/dot.hpp"

namespace akv::cuda {

inline constexpr int kGemmBM = 64;   // rows (tokens) per block of the emulation's default tile
inline constexpr int kGemmBN = 64;   // outputs per block
inline constexpr int kGemmBK = 16;   // k per shared-memory tile

/// One GEMM kernel variant: block tile bm x bn, k-tile bk, tm x tn outputs per thread,
/// (bm/tm)*(bn/tn) threads. The device launcher instantiates each (device/gemm.cu).
struct GemmVariant {
  const char* name;
  int bm, bn, bk, tm, tn;
};

/// The variants, largest tile first. Index into this table = the launcher's variant id.
inline constexpr GemmVariant kGemmVariants[] = {
    {"128x128/8x8/16", 128, 128, 16, 8, 8},
    {"128x128/8x4/16", 128, 128, 16, 8, 4},
    {"128x96/8x8/16", 128, 96, 16, 8, 8},
    {"96x128/8x8/16", 96, 128, 16, 8, 8},
    {"96x128/8x4/16", 96, 128, 16, 8, 4},
    {"128x64/8x8/16", 128, 64, 16, 8, 8},
    {"128x64/4x4/16", 128, 64, 16, 4, 4},
    {"64x64/4x4/16", 64, 64, 16, 4, 4},
    {"64x64/4x4/32", 64, 64, 32, 4, 4},
    {"64x32/4x4/16", 64, 32, 16, 4, 4},
    {"32x32/4x4/32", 32, 32, 32, 4, 4},
};
inline constexpr int kGemmVariantCount = sizeof(kGemmVariants) / sizeof(kGemmVariants[0]);

/// Rows of one forward chunk: a call of m tokens runs as ceil(m / kMaxRows) chunks. Only
/// the scratch size depends on it, never the arithmetic (G8).
inline constexpr int kMaxRows = 2048;

}  // namespace akv::cuda
