// Causal attention's arithmetic on the GPU (spec/kernels-cuda.md G5): split-KV with a fixed
// split size kKvSplit anchored at absolute position 0. A query at position p attends to keys
// [0, p]; split c covers keys [c*kKvSplit, min((c+1)*kKvSplit, p+1)). Each split yields a
// partial (max m_c, sum l_c, weighted values o_c); the partials are merged in split order.
// Both steps depend only on p and the cache rows [0, p]: never on the call or the batch.
#pragma once
#include "optimized/cuda/arith/dot.hpp"

namespace akv::cuda {

/// The softmax scale 1 / sqrt(head_dim), as the reference computes it (M9).
AKV_HD inline float attn_scale(int head_dim) { return 1.0f / sqrtf(static_cast<float>(head_dim)); }

/// max as the reference takes it (A3): b when a < b, else a.
AKV_HD inline float fmax_ref(float a, float b) { return a < b ? b : a; }

/// Score of one key (G5): dot_chain(q, k_j) * scale. q, k: (head_dim,), unit stride.
AKV_HD inline float attn_score(const float* q, const float* k, int head_dim, float scale) {
  return dot_chain(q, k, head_dim) * scale;
}

/// The split's max score, left to right from s[0]: s (n,), n >= 1.
AKV_HD inline float attn_split_max(const float* s, int n) {
  float mx = s[0];
  for (int j = 1; j < n; ++j) mx = fmax_ref(mx, s[j]);
  return mx;
}

/// One softmax weight of a split: exp(s_j - m), with the one exp (A4).
AKV_HD inline float attn_weight(float s, float m) { return akv::exp(s - m); }

/// The split's sum of weights, left to right from +0: e (n,).
AKV_HD inline float attn_split_sum(const float* e, int n) {
  float sum = 0.0f;
  for (int j = 0; j < n; ++j) sum = sum + e[j];
  return sum;
}

/// One output element of a split: sum_j e_j * v_j, the fma chain j ascending from +0.
/// e (n,); v: element j at v[j * stride].
AKV_HD inline float attn_split_value(const float* e, const float* v, long stride, int n) {
  float acc = 0.0f;
  for (int j = 0; j < n; ++j) acc = mac(acc, e[j], v[j * stride]);
  return acc;
}

/// One split's partial for query q (head_dim,) over keys [begin, end) (1 <= end - begin <=
/// kKvSplit). k, v: one KV head's cache rows, row j at j*stride. Writes m (the max score),
/// l (sum of exp(score - m)) and o (head_dim,) = sum_j exp(s_j - m) * v_j.
/// Order: s_j = dot_chain(q, k_j) * scale, j ascending; m left to right; l = l + e_j and
/// o[d] = fma(e_j, v_j[d], o[d]), j ascending, from +0. This is the sequence of every value
/// of a partial, however a kernel spreads the values over threads (the emulation runs it as
/// written; the device kernel computes the same values from shared-memory copies).
/// mask: nullptr, or the cache's mask bytes (absolute positions; spec/leakage.md L3): a masked
/// key's score is -inf, so its weight is +0; a split whose keys are all masked yields m = -inf,
/// l = 0, o = 0, which the merge weighs by exp(-inf - M) = +0.
AKV_HD inline void attn_split_partial(const float* q, const float* k, const float* v, int stride,
                                      int head_dim, float scale, int begin, int end, float* m,
                                      float* l, float* o, const unsigned char* mask = nullptr) {
  float s[kKvSplit] = {};  // s[j], j < n, written before read (the init only quiets a warning)
  const int n = end - begin;
  for (int j = 0; j < n; ++j) s[j] = attn_score(q, k + static_cast<long>(begin + j) * stride, head_dim, scale);
  if (mask != nullptr)
    for (int j = 0; j < n; ++j)
      if (mask[begin + j]) s[j] = -INFINITY;
  const float mx = attn_split_max(s, n);
  if (mask != nullptr && mx == -INFINITY) {  // every key of the split masked
    *l = 0.0f;
    for (int d = 0; d < head_dim; ++d) o[d] = 0.0f;
    *m = mx;
    return;
  }
  for (int j = 0; j < n; ++j) s[j] = attn_weight(s[j], mx);
  *l = attn_split_sum(s, n);
  for (int d = 0; d < head_dim; ++d) o[d] = attn_split_value(s, v + static_cast<long>(begin) * stride + d, stride, n);
  *m = mx;
}

/// The merge weights of `n` partials (m, l: (n,)): M = max m_c left to right;
/// alpha_c = exp(m_c - M) into alpha (n,); returns L = sum_c l_c * alpha_c as an fma chain.
AKV_HD inline float attn_merge_weights(const float* m, const float* l, int n, float* alpha) {
  float mx = m[0];
  for (int c = 1; c < n; ++c) mx = fmax_ref(mx, m[c]);
  float sum = 0.0f;
  for (int c = 0; c < n; ++c) {
    alpha[c] = akv::exp(m[c] - mx);
    sum = mac(sum, l[c], alpha[c]);
  }
  return sum;
}

/// Output element d of the merged head: (sum_c o_c[d] * alpha_c, fma chain in c) / L.
/// o: (n, head_dim) partials, alpha: (n,), L from attn_merge_weights.
AKV_HD inline float attn_merge_out(const float* o, const float* alpha, int n, int head_dim, int d, float L) {
  float acc = 0.0f;
  for (int c = 0; c < n; ++c) acc = mac(acc, o[static_cast<long>(c) * head_dim + d], alpha[c]);
  return acc / L;
}

}  // namespace akv::cuda
