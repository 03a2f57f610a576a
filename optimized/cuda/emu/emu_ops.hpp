// The host emulation of the CUDA kernels (spec/kernels-cuda.md G9): each function runs one
// kernel's launch on the CPU (its blocks, tiles and threads as loops) through the same
// __host__ __device__ arithmetic (arith/*.hpp), so its bits are the kernel's bits.
#pragma once
#include "optimized/cuda/arith/gemm.hpp"

namespace akv::cuda::emu {

/// Tile sizes of the GEMM launch (G2); the kernel's by default.
struct GemmTiles {
  int bm = kGemmBM, bn = kGemmBN, bk = kGemmBK;
};

/// out (M, d) = X (M, n) @ W^T, W (d, n) row-major, walking the launch's blocks, chunks of k
/// (splitk_chunks(n, d) of them, gemm.hpp) and k-tiles, then adding the chunk sums in chunk
/// order, as the device's two kernels. Every output is dot_splitk(W row, X row, n, d).
/// tiles: any positive sizes (the result does not depend on them: G2).
void gemm(float* out, const float* X, const float* W, int M, int n, int d, GemmTiles tiles = {});

/// out (M, n) = RMSNorm of each row of x (M, n) with weight w (n,) (G3). out may alias x.
void rmsnorm_rows(float* out, const float* x, const float* w, int M, int n, float eps);

/// Rotates x (M, n_heads * head_dim), row r at position pos0 + r, with the table rows
/// cos/sin (max_pos, head_dim/2) (G4).
void rope_rows(float* x, int M, int n_heads, int head_dim, int pos0, const float* cos, const float* sin);

/// Causal GQA attention (G5) for M queries q (M, n_heads*head_dim) at positions
/// pos0 .. pos0+M-1 over the cache rows k, v (>= pos0+M, kv_heads*head_dim) of one layer;
/// out (M, n_heads*head_dim). Runs the partial kernel then the merge kernel. mask: nullptr or
/// the cache's mask bytes (KVCache::mask(), spec/leakage.md L3).
void attention_rows(float* out, const float* q, const float* k, const float* v, int M, int pos0,
                    int n_heads, int n_kv_heads, int head_dim, const unsigned char* mask = nullptr);

}  // namespace akv::cuda::emu
