// The reference forward pass (spec/model.md M11): one token at a time through every layer,
// as llama2.c's forward(). Written once over the scalar type T.
#pragma once
#include <algorithm>
#include <limits>
#include <type_traits>
#include <vector>

#include "reference/kv_cache.hpp"
#include "reference/model.hpp"
#include "reference/ops.hpp"

namespace akv::ref {

/// Scratch of one forward call. Contents between calls are meaningless; tests fill them
/// with NaN (or garbage) to show no output depends on them (I1).
template <class T>
struct RunState {
  std::vector<T> x;    // (hidden,) the residual stream
  std::vector<T> xb;   // (hidden,) RMSNorm's output, then each block's output before the add
  std::vector<T> xb2;  // (q_dim,) the attention heads' outputs, head h at h * head_dim
  std::vector<T> q;    // (q_dim,) = (n_heads * head_dim,) the query, rotated
  std::vector<T> k;    // (kv_dim,) = (n_kv_heads * head_dim,) the key, rotated, then copied to the cache
  std::vector<T> v;    // (kv_dim,) the value, copied to the cache
  std::vector<T> hb;   // (ffn,) the gate w1 x, then SwiGLU's output
  std::vector<T> hb2;  // (ffn,) the up projection w3 x
  std::vector<T> att;  // (>= pos + 1,) one head's scores, then its weights
  std::vector<T> kr, vr;  // a typed cache's rows of one layer as float32 (spec/state.md S8); unused for f32
  explicit RunState(const Config& c)
      : x(c.hidden), xb(c.hidden), xb2(c.q_dim()), q(c.q_dim()), k(c.kv_dim()), v(c.kv_dim()),
        hb(c.ffn), hb2(c.ffn) {}  // att grows with the cache (forward_token), never to a claimed max_ctx
  void fill(T value) {
    for (auto* b : {&x, &xb, &xb2, &q, &k, &v, &hb, &hb2, &att, &kr, &vr}) std::fill(b->begin(), b->end(), value);
  }
};

/// The K/V rounding of the cache type as the enclosures model it (spec/bounds.md B18): nothing
/// for an exact scalar (the MPFR oracle and the interval enclosure compute the model whose cache
/// keeps the exact values); the affine enclosure's overload (verify/bounds/affine_ops.hpp, found
/// by argument-dependent lookup) adds each element's rounding. row: (n,) = (n_kv_heads, head_dim).
template <class T>
void kv_round_row(T* /*row*/, int /*n*/, int /*head_dim*/, KvType /*type*/) {}

/// Runs `token` at position `pos` == cache.size(): appends its K/V to every layer of
/// `cache` (rounded as its type stores them, spec/state.md S5-S7) and writes its logits (vocab,) to `logits`; logits == nullptr skips the final
/// RMSNorm and classifier (the cache is the same either way). Preconditions (checked by the
/// caller, the Session): 0 <= token < vocab, pos < max_ctx. The weights' scalar Wt is T, or
/// float under a wider T (the interval oracle keeps a real model's weights as floats, B17).
template <class T, class Wt>
void forward_token(const ModelT<Wt>& m, KVCacheT<T>& cache, Token token, T* logits, RunState<T>& s) {
  const Config& c = m.config;
  const int d = c.hidden, hd = c.head_dim, kvd = c.kv_dim();
  const int group = c.n_heads / c.n_kv_heads;
  const int pos = static_cast<int>(cache.grow(1));
  if (s.att.size() < static_cast<size_t>(pos) + 1) s.att.resize(std::max<size_t>(static_cast<size_t>(pos) + 1, 2 * s.att.size()));

  std::copy_n(m.weights.tok_emb.begin() + static_cast<size_t>(token) * d, d, s.x.begin());
  if (c.embed_scale != 0.0f) scale_inplace(s.x.data(), c.embed_scale, d);  // M18
  for (int l = 0; l < c.n_layers; ++l) {
    const LayerWeights<Wt>& w = m.weights.layers[l];
    const RopeTable& table = m.rope_for(l);  // M19: a sliding layer's own base
    const float* cos = table.cos_at(pos);
    const float* sin = table.sin_at(pos);
    rmsnorm(s.xb.data(), s.x.data(), w.attn_norm.data(), d, c.rms_eps);
    matmul(s.q.data(), s.xb.data(), w.wq.data(), d, c.q_dim());
    matmul(s.k.data(), s.xb.data(), w.wk.data(), d, kvd);
    matmul(s.v.data(), s.xb.data(), w.wv.data(), d, kvd);
    if (c.qkv_bias) {  // M14
      add_inplace(s.q.data(), w.bq.data(), c.q_dim());
      add_inplace(s.k.data(), w.bk.data(), kvd);
      add_inplace(s.v.data(), w.bv.data(), kvd);
    }
    if (c.qk_norm) {  // M15: each head normalised over head_dim, in place
      for (int h = 0; h < c.n_heads; ++h) rmsnorm(s.q.data() + static_cast<size_t>(h) * hd, s.q.data() + static_cast<size_t>(h) * hd, w.q_norm.data(), hd, c.rms_eps);
      for (int h = 0; h < c.n_kv_heads; ++h) rmsnorm(s.k.data() + static_cast<size_t>(h) * hd, s.k.data() + static_cast<size_t>(h) * hd, w.k_norm.data(), hd, c.rms_eps);
    }
    rope(s.q.data(), c.n_heads, hd, cos, sin);
    rope(s.k.data(), c.n_kv_heads, hd, cos, sin);
    if constexpr (!std::is_same_v<T, float>) {
      kv_round_row(s.k.data(), kvd, hd, cache.type());
      kv_round_row(s.v.data(), kvd, hd, cache.type());
    }
    cache.store(l, static_cast<size_t>(pos), s.k.data(), s.v.data());  // S6, S7: a typed row is rounded here
    // M19: a sliding layer's query sees keys [first, pos]; the attention over them alone.
    const int first = c.sliding(l) ? std::max(0, pos - c.sliding_window + 1) : 0;
    const size_t n_keys = static_cast<size_t>(pos + 1 - first);
    // S8: the rows as float32 (a typed cache's converted, exactly), then the same attention.
    const T* keys = cache.k_rows(l, static_cast<size_t>(first), n_keys, s.kr);
    const T* vals = cache.v_rows(l, static_cast<size_t>(first), n_keys, s.vr);
    const unsigned char* mask = cache.mask() == nullptr ? nullptr : cache.mask() + first;
    for (int h = 0; h < c.n_heads; ++h) {
      const size_t kv_off = static_cast<size_t>(h / group) * hd;
      attention_head(s.xb2.data() + static_cast<size_t>(h) * hd, s.q.data() + static_cast<size_t>(h) * hd,
                     keys + kv_off, vals + kv_off, pos + 1 - first, kvd, hd, s.att.data(), mask);
    }
    matmul(s.xb.data(), s.xb2.data(), w.wo.data(), c.q_dim(), d);
    if (c.post_norms) rmsnorm(s.xb.data(), s.xb.data(), w.post_attn_norm.data(), d, c.rms_eps);  // M16
    add_inplace(s.x.data(), s.xb.data(), d);
    rmsnorm(s.xb.data(), s.x.data(), w.ffn_norm.data(), d, c.rms_eps);
    matmul(s.hb.data(), s.xb.data(), w.w1.data(), d, c.ffn);
    matmul(s.hb2.data(), s.xb.data(), w.w3.data(), d, c.ffn);
    if (c.geglu) geglu(s.hb.data(), s.hb.data(), s.hb2.data(), c.ffn);  // M17
    else swiglu(s.hb.data(), s.hb.data(), s.hb2.data(), c.ffn);
    matmul(s.xb.data(), s.hb.data(), w.w2.data(), c.ffn, d);
    if (c.post_norms) rmsnorm(s.xb.data(), s.xb.data(), w.post_ffn_norm.data(), d, c.rms_eps);  // M16
    add_inplace(s.x.data(), s.xb.data(), d);
  }
  if (logits == nullptr) return;
  rmsnorm(s.xb.data(), s.x.data(), m.weights.final_norm.data(), d, c.rms_eps);
  matmul(logits, s.xb.data(), classifier(m.weights).data(), d, c.vocab);
}

}  // namespace akv::ref
