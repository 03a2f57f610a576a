// The GEMM's split of k and its tiling (spec/kernels-cuda.md G2). Out (M, d) = X (M, n) @ W^T,
// W (d, n) row-major: out[m, i] = dot_splitk(W row i, X row m, n, d). k is cut into
// splitk_chunks(n, d) chunks of splitk_len(n, d) (the last one shorter): a pure function of
// the product's shape, never of M, the batch, the variant or the device. Every kernel
// variant gives each block a bm x bn output tile of one chunk and walks the chunk's k in
// bk-wide tiles, ascending, each output's accumulator in one thread's registers; a second
// kernel adds the chunk sums in chunk order (no atomics). So the launcher may pick any
// variant for any shape (for speed) without changing a bit, and the host emulation takes the
// tile sizes as parameters so the suite can show they do not matter.
#pragma once
#include "optimized/cuda/arith/dot.hpp"

namespace akv::cuda {

/// Split-K (G2): products with at most kSplitKMaxD outputs per row are cut into at most
/// kSplitKMaxChunks chunks of k, each a multiple of kSplitKAlign long (but the last): narrow
/// outputs give too few output tiles to fill a GPU, and a long k is where that shows.
inline constexpr int kSplitKMaxD = 1024;
inline constexpr int kSplitKMaxChunks = 8;
inline constexpr int kSplitKAlign = 16;

/// The chunk length of a product with reduction length n and d outputs per row: n (one
/// chunk, the plain chain) when d > kSplitKMaxD or n <= kSplitKAlign; else ceil(n /
/// kSplitKMaxChunks) rounded up to a multiple of kSplitKAlign. A function of (n, d) only.
AKV_HD constexpr int splitk_len(int n, int d) {
  if (d > kSplitKMaxD || n <= kSplitKAlign) return n;
  const int per = (n + kSplitKMaxChunks - 1) / kSplitKMaxChunks;
  return (per + kSplitKAlign - 1) / kSplitKAlign * kSplitKAlign;
}

/// The chunk count S = ceil(n / splitk_len(n, d)), 1 when n == 0; 1 <= S <= kSplitKMaxChunks.
/// Chunk c covers k in [c * L, min((c + 1) * L, n)); every chunk is nonempty when n > 0.
AKV_HD constexpr int splitk_chunks(int n, int d) {
  const int len = splitk_len(n, d);
  return len == 0 ? 1 : (n + len - 1) / len;
}

/// One output of G2: dot_range over each chunk of k, then splitk_combine in chunk order.
/// w, x: (n,); d: the product's outputs per row (it picks the split, nothing else).
AKV_HD inline float dot_splitk(const float* w, const float* x, int n, int d) {
  const int len = splitk_len(n, d), S = splitk_chunks(n, d);
  float p[kSplitKMaxChunks];
  for (int c = 0; c < S; ++c) p[c] = dot_range(w, x, c * len, (c + 1) * len < n ? (c + 1) * len : n);
  return splitk_combine(p, 1, S);
}

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
