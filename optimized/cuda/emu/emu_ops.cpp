#include "optimized/cuda/emu/emu_ops.hpp"

#include <algorithm>
#include <vector>

#include "optimized/cuda/arith/attention.hpp"
#include "optimized/cuda/arith/elementwise.hpp"
#include "optimized/cuda/arith/rmsnorm.hpp"

namespace akv::cuda::emu {

namespace {

// The main kernel's launch for chunk [k0, k1) of k: each block's accumulators over the chunk's
// k-tiles, ascending, stored to dst (M, d).
void gemm_chunk(float* dst, const float* X, const float* W, int M, int n, int d, int k0, int k1, GemmTiles t) {
  std::vector<float> acc(static_cast<size_t>(t.bm) * t.bn);  // (bm, bn) one block's accumulators, as its registers
  for (int m0 = 0; m0 < M; m0 += t.bm)
    for (int i0 = 0; i0 < d; i0 += t.bn) {  // one block
      const int mb = std::min(t.bm, M - m0), ib = std::min(t.bn, d - i0);
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (int kt = k0; kt < k1; kt += t.bk) {  // the chunk's k-tiles ascending
        const int kb = std::min(t.bk, k1 - kt);
        for (int kk = 0; kk < kb; ++kk)
          for (int r = 0; r < mb; ++r)
            for (int c = 0; c < ib; ++c) {
              float& a = acc[static_cast<size_t>(r) * t.bn + c];
              a = mac(a, X[static_cast<size_t>(m0 + r) * n + kt + kk], W[static_cast<size_t>(i0 + c) * n + kt + kk]);
            }
      }
      for (int r = 0; r < mb; ++r)
        for (int c = 0; c < ib; ++c) dst[static_cast<size_t>(m0 + r) * d + i0 + c] = acc[static_cast<size_t>(r) * t.bn + c];
    }
}

}  // namespace

void gemm(float* out, const float* X, const float* W, int M, int n, int d, GemmTiles t) {
  const int len = splitk_len(n, d), S = splitk_chunks(n, d);
  if (S == 1) {  // one chunk: the blocks store their chains straight to out
    gemm_chunk(out, X, W, M, n, d, 0, n, t);
    return;
  }
  // The partials (S, M, d), one launch's worth per chunk (the device runs them as one grid),
  // then the combine kernel: one thread per output, chunks in order.
  const size_t md = static_cast<size_t>(M) * d;
  std::vector<float> part(static_cast<size_t>(S) * md);
  for (int c = 0; c < S; ++c) gemm_chunk(part.data() + c * md, X, W, M, n, d, c * len, std::min((c + 1) * len, n), t);
  for (size_t e = 0; e < md; ++e) out[e] = splitk_combine(part.data() + e, static_cast<long>(md), S);
}

void rmsnorm_rows(float* out, const float* x, const float* w, int M, int n, float eps) {
  for (int r = 0; r < M; ++r) {  // one warp per row
    const float* xr = x + static_cast<size_t>(r) * n;
    float* o = out + static_cast<size_t>(r) * n;
    const float inv = rms_inv(rms_sumsq(xr, n), n, eps);
    for (int j = 0; j < n; ++j) o[j] = rms_apply(xr[j], inv, w[j]);
  }
}

void rope_rows(float* x, int M, int n_heads, int head_dim, int pos0, const float* cos, const float* sin) {
  const int half = head_dim / 2;
  for (int r = 0; r < M; ++r) {
    const float* c = cos + static_cast<size_t>(pos0 + r) * half;
    const float* s = sin + static_cast<size_t>(pos0 + r) * half;
    for (int h = 0; h < n_heads; ++h) {
      float* v = x + (static_cast<size_t>(r) * n_heads + h) * head_dim;
      for (int i = 0; i < half; ++i) rope_pair(v[i], v[i + half], c[i], s[i], &v[i], &v[i + half]);
    }
  }
}

void attention_rows(float* out, const float* q, const float* k, const float* v, int M, int pos0,
                    int n_heads, int n_kv_heads, int head_dim, const unsigned char* mask) {
  const int kvd = n_kv_heads * head_dim, qd = n_heads * head_dim, group = n_heads / n_kv_heads;
  const float scale = attn_scale(head_dim);
  const int max_splits = n_splits(pos0 + M);
  // One (row, head)'s splits, as the device's partials: max score, sum of weights, output (splits, head_dim), rescale.
  std::vector<float> pm(max_splits), pl(max_splits), po(static_cast<size_t>(max_splits) * head_dim), alpha(max_splits);
  for (int r = 0; r < M; ++r)
    for (int h = 0; h < n_heads; ++h) {
      const int n_keys = pos0 + r + 1, ns = n_splits(n_keys);
      const float* qh = q + static_cast<size_t>(r) * qd + static_cast<size_t>(h) * head_dim;
      const size_t kv_off = static_cast<size_t>(h / group) * head_dim;
      for (int c = 0; c < ns; ++c)  // the partial kernel: one thread per (row, head, split)
        attn_split_partial(qh, k + kv_off, v + kv_off, kvd, head_dim, scale, c * kKvSplit,
                           std::min((c + 1) * kKvSplit, n_keys), &pm[c], &pl[c], &po[static_cast<size_t>(c) * head_dim], mask);
      const float L = attn_merge_weights(pm.data(), pl.data(), ns, alpha.data());  // the merge kernel
      float* o = out + static_cast<size_t>(r) * qd + static_cast<size_t>(h) * head_dim;
      for (int d = 0; d < head_dim; ++d) o[d] = attn_merge_out(po.data(), alpha.data(), ns, head_dim, d, L);
    }
}

}  // namespace akv::cuda::emu
