// The attention kernels (spec/kernels-cuda.md G5): split-KV partials, then the merge. Every
// value is computed by the arith/attention.hpp sequence the emulation runs; the partial
// kernel only spreads those values over threads. No atomics, no warp reductions.
#include <cuda_runtime.h>

#include <algorithm>

#include "optimized/cuda/arith/attention.hpp"
#include "optimized/cuda/device/kernels.cuh"

namespace akv::cuda::dev {

namespace {

constexpr int kAttnThreads = 256;

// Shared-memory floats of one partial block: Q (qt rows), K and V (kKvSplit rows), each row
// padded to head_dim + 1 against bank conflicts, and the scores (qt x kKvSplit) with the
// per-row max.
size_t partial_smem_floats(int qt, int head_dim) {
  return static_cast<size_t>(qt + 2 * kKvSplit) * (head_dim + 1) + static_cast<size_t>(qt) * (kKvSplit + 1);
}

// G5, step 1. Block (tile, head, split c): the queries r0 .. r0+qt-1 of the tile against
// split c's keys. Values, each the attn_split_partial sequence for its (row, c):
//   scores s_ij = attn_score(q_i, k_j)       2 rows x 4 keys per thread
//   m_i = attn_split_max(s_i), then the weights e_ij = attn_weight(s_ij, m_i)
//   l_i = attn_split_sum(e_i)                  one thread per row
//   o_i[d] = attn_split_value(e_i, v[.][d])    2 rows x 4 elements per thread
// over the row's keys j < n_i = min(kKvSplit, p_i + 1 - 64c). Rows that do not reach split c
// (and rows past M) write nothing; the merge reads only the splits a row has.
__global__ void __launch_bounds__(kAttnThreads)
    attn_partial_kernel(const float* __restrict__ q, const float* __restrict__ k, const float* __restrict__ v, int M,
                        int pos0, const int* pos_dev, int n_heads, int n_kv_heads, int head_dim, int max_splits,
                        int qt, float* __restrict__ pm, float* __restrict__ pl, float* __restrict__ po) {
  extern __shared__ float sm[];
  if (pos_dev != nullptr) pos0 = *pos_dev;  // a replayed graph's position (the grid spans max_splits)
  const int hs = head_dim + 1, ss = kKvSplit + 1;
  float* Qs = sm;
  float* Ks = Qs + qt * hs;
  float* Vs = Ks + kKvSplit * hs;
  float* S = Vs + kKvSplit * hs;  // (qt, ss): scores, then weights; column kKvSplit: m_i
  const int t = threadIdx.x, r0 = blockIdx.x * qt, h = blockIdx.y, c = blockIdx.z;
  const int key0 = c * kKvSplit;
  const int rows = min(qt, M - r0);
  const int last_key = pos0 + r0 + rows - 1;  // the tile's last row's position
  if (key0 > last_key) return;                // no row of the tile reaches this split
  const int nk = min(kKvSplit, last_key + 1 - key0);
  const int qd = n_heads * head_dim, kvd = n_kv_heads * head_dim;
  const size_t kv_off = static_cast<size_t>(h / (n_heads / n_kv_heads)) * head_dim;
  auto n_of = [&](int i) { return min(kKvSplit, pos0 + r0 + i + 1 - key0); };  // <= 0: no split c

  for (int e = t; e < rows * head_dim; e += kAttnThreads) {
    const int i = e / head_dim, d = e % head_dim;
    Qs[i * hs + d] = q[static_cast<size_t>(r0 + i) * qd + static_cast<size_t>(h) * head_dim + d];
  }
  for (int e = t; e < nk * head_dim; e += kAttnThreads) {
    const int j = e / head_dim, d = e % head_dim;
    const size_t at = static_cast<size_t>(key0 + j) * kvd + kv_off + d;
    Ks[j * hs + d] = k[at];
    Vs[j * hs + d] = v[at];
  }
  __syncthreads();
  // Scores: thread (tr, tc) holds rows i0, i0+1 by keys tc + 16u, u < 4, as 8 accumulators;
  // each is attn_score's chain (dot_chain: mac over d ascending from +0, then * scale), the
  // chains interleaved only to share the shared-memory loads.
  const float scale = attn_scale(head_dim);
  const int tr = t / 16, tc = t % 16;
  for (int i0 = 2 * tr; i0 < rows; i0 += 2 * (kAttnThreads / 16)) {
    const float* q0 = Qs + i0 * hs;
    const float* q1 = q0 + hs;  // row i0 + 1: read, and used only when it exists
    float acc[2][4] = {};
    for (int d = 0; d < head_dim; ++d) {
      const float a0 = q0[d], a1 = q1[d];
#pragma unroll
      for (int u = 0; u < 4; ++u) {
        const float kv = Ks[(tc + 16 * u) * hs + d];
        acc[0][u] = mac(acc[0][u], a0, kv);
        acc[1][u] = mac(acc[1][u], a1, kv);
      }
    }
#pragma unroll
    for (int r = 0; r < 2; ++r)
#pragma unroll
      for (int u = 0; u < 4; ++u)
        if (i0 + r < rows && tc + 16 * u < n_of(i0 + r)) S[(i0 + r) * ss + tc + 16 * u] = acc[r][u] * scale;
  }
  __syncthreads();
  for (int i = t; i < rows; i += kAttnThreads)
    if (n_of(i) > 0) S[i * ss + kKvSplit] = attn_split_max(S + i * ss, n_of(i));
  __syncthreads();
  for (int e = t; e < rows * kKvSplit; e += kAttnThreads) {
    const int i = e / kKvSplit, j = e % kKvSplit;
    if (j < n_of(i)) S[i * ss + j] = attn_weight(S[i * ss + j], S[i * ss + kKvSplit]);
  }
  __syncthreads();
  for (int i = t; i < rows; i += kAttnThreads) {
    if (n_of(i) <= 0) continue;
    const size_t slot = (static_cast<size_t>(r0 + i) * n_heads + h) * max_splits + c;
    pm[slot] = S[i * ss + kKvSplit];
    pl[slot] = attn_split_sum(S + i * ss, n_of(i));
  }
  // Values: thread (tr, tc) holds rows i0, i0+1 by elements d0 + 16u; each accumulator is
  // attn_split_value's chain (mac over the row's keys ascending from +0). Row i0 + 1 has one
  // key more than row i0 (or both have kKvSplit).
  for (int i0 = 2 * tr; i0 < rows; i0 += 2 * (kAttnThreads / 16)) {
    const int n0 = n_of(i0), n1 = i0 + 1 < rows ? n_of(i0 + 1) : n0;
    if (n1 <= 0) continue;
    const float* e0 = S + i0 * ss;
    const float* e1 = e0 + ss;
    for (int d0 = tc; d0 < head_dim; d0 += 64) {
      float acc[2][4] = {};
      for (int j = 0; j < n1; ++j) {
        const bool first = j < n0;
        const float w0 = first ? e0[j] : 0.0f, w1 = e1[j];
#pragma unroll
        for (int u = 0; u < 4; ++u) {
          const float vv = d0 + 16 * u < head_dim ? Vs[j * hs + d0 + 16 * u] : 0.0f;
          if (first) acc[0][u] = mac(acc[0][u], w0, vv);
          acc[1][u] = mac(acc[1][u], w1, vv);
        }
      }
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const int i = i0 + r;
        if (i >= rows || n_of(i) <= 0) continue;
        const size_t slot = (static_cast<size_t>(r0 + i) * n_heads + h) * max_splits + c;
#pragma unroll
        for (int u = 0; u < 4; ++u)
          if (d0 + 16 * u < head_dim) po[slot * head_dim + d0 + 16 * u] = acc[r][u];
      }
    }
  }
}

// G5, step 2. One block per (row, head): weights on thread 0 in split order, then one
// output element per thread.
__global__ void attn_merge_kernel(float* out, int pos0, const int* pos_dev, int n_heads, int head_dim, int max_splits,
                                  const float* pm, const float* pl, const float* po) {
  extern __shared__ float alpha[];  // (max_splits,)
  __shared__ float L;
  if (pos_dev != nullptr) pos0 = *pos_dev;
  const int rh = blockIdx.x, r = rh / n_heads;
  const int ns = n_splits(pos0 + r + 1);
  const size_t slot = static_cast<size_t>(rh) * max_splits;
  if (threadIdx.x == 0) L = attn_merge_weights(pm + slot, pl + slot, ns, alpha);
  __syncthreads();
  for (int d = threadIdx.x; d < head_dim; d += blockDim.x)
    out[static_cast<size_t>(rh) * head_dim + d] = attn_merge_out(po + slot * head_dim, alpha, ns, head_dim, d, L);
}

}  // namespace

void attention_rows(float* out, const float* q, const float* k, const float* v, int M, int pos0, int n_heads,
                    int n_kv_heads, int head_dim, int max_splits, float* pm, float* pl, float* po, cudaStream_t s,
                    const int* pos_dev) {
  if (M <= 0) return;
  // Query rows per block: speed only (each value's sequence is fixed). Small calls (decode)
  // take small tiles so that no block computes mostly absent rows.
  const int qt = M >= 64 ? 64 : (M >= 8 ? 8 : 2);
  const size_t smem = partial_smem_floats(qt, head_dim) * sizeof(float);
  if (smem > 48 * 1024)  // past the default: opt in on this device (cheap; per launch, so per device)
    check(cudaFuncSetAttribute(attn_partial_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)),
          "attention shared memory (head_dim too large for this GPU?)");
  // With pos_dev the position is read on the device: the grid spans every split the scratch
  // holds and a block past its tile's last key exits (the same values, the same slots).
  const dim3 grid((M + qt - 1) / qt, n_heads, pos_dev != nullptr ? max_splits : n_splits(pos0 + M));
  attn_partial_kernel<<<grid, kAttnThreads, smem, s>>>(q, k, v, M, pos0, pos_dev, n_heads, n_kv_heads, head_dim,
                                                       max_splits, qt, pm, pl, po);
  check(cudaGetLastError(), "attention partial");
  // alpha: max_splits floats, rounded up to whole float4s plus one more. compute-sanitizer's
  // memcheck (H200, 2026-11-30) flagged 12-byte shared reads at the start of alpha with the
  // exact size. The bits were right (G10), which points to a vector read whose extra lanes go
  // unused. The slack keeps every such read inside the allocation (docs/cuda.md).
  const size_t alpha_bytes = (static_cast<size_t>(max_splits + 3) / 4 + 1) * 4 * sizeof(float);
  attn_merge_kernel<<<M * n_heads, kWarpLanes, alpha_bytes, s>>>(out, pos0, pos_dev, n_heads, head_dim, max_splits, pm, pl,
                                                             po);
  check(cudaGetLastError(), "attention merge");
}

}  // namespace akv::cuda::dev
