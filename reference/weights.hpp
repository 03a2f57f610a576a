// Model weights, as a template over the scalar type so the oracle can hold the same values
// (spec/model.md M3, M4).
#pragma once
#include <cstdint>
#include <vector>

#include "reference/config.hpp"

namespace akv {

/// Row-major matrices: W (d, n) stores row i at [i*n, (i+1)*n) and maps x (n,) -> y (d,).
template <class T>
struct LayerWeights {
  std::vector<T> attn_norm;  // (hidden,)
  std::vector<T> wq;         // (n_heads*head_dim, hidden)
  std::vector<T> wk;         // (kv_dim, hidden)
  std::vector<T> wv;         // (kv_dim, hidden)
  std::vector<T> wo;         // (hidden, n_heads*head_dim)
  std::vector<T> ffn_norm;   // (hidden,)
  std::vector<T> w1;         // (ffn, hidden)   gate
  std::vector<T> w2;         // (hidden, ffn)   down
  std::vector<T> w3;         // (ffn, hidden)   up
  // Present only under the Config feature that reads them (spec/model.md M14-M16), else empty:
  std::vector<T> bq, bk, bv;          // (q_dim,), (kv_dim,), (kv_dim,) QKV biases (M14)
  std::vector<T> q_norm, k_norm;      // (head_dim,) each: the per-head QK-norm weights (M15)
  std::vector<T> post_attn_norm;      // (hidden,) RMSNorm of the attention output (M16)
  std::vector<T> post_ffn_norm;       // (hidden,) RMSNorm of the FFN output (M16)
};

template <class T>
struct Weights {
  std::vector<T> tok_emb;  // (vocab, hidden)
  std::vector<LayerWeights<T>> layers;
  std::vector<T> final_norm;  // (hidden,)
  std::vector<T> wcls;        // (vocab, hidden); empty when the output is tied (no copy kept)
};

/// W_cls (vocab, hidden): `wcls`, or tok_emb itself when the output is tied to the embedding
/// (Config::tied_output, spec/gguf.md C3: `wcls` is then empty, so no 4*vocab*hidden-byte copy).
template <class T>
const std::vector<T>& classifier(const Weights<T>& w) {
  return w.wcls.empty() ? w.tok_emb : w.wcls;
}

/// fl(gain / sqrt(fan_in)), the scale of a synthetic matrix (spec/model.md M3): the exact
/// quotient rounded once to float32, to nearest. gain finite in [2^-60, 2^60], fan_in >= 1.
float weight_scale(float gain, int fan_in);

/// The synthetic weights of `cfg` under `seed`, bit-for-bit as spec/model.md M3 defines.
Weights<float> make_synthetic_weights(const Config& cfg, uint64_t seed);

/// The same weights in another scalar type (every float32 converts exactly).
template <class T>
Weights<T> convert_weights(const Weights<float>& w) {
  auto cv = [](const std::vector<float>& v) { return std::vector<T>(v.begin(), v.end()); };
  Weights<T> o;
  o.tok_emb = cv(w.tok_emb);
  for (const auto& l : w.layers) {
    o.layers.push_back({cv(l.attn_norm), cv(l.wq), cv(l.wk), cv(l.wv), cv(l.wo), cv(l.ffn_norm), cv(l.w1), cv(l.w2),
                        cv(l.w3), cv(l.bq), cv(l.bk), cv(l.bv), cv(l.q_norm), cv(l.k_norm), cv(l.post_attn_norm),
                        cv(l.post_ffn_norm)});
  }
  o.final_norm = cv(w.final_norm);
  o.wcls = cv(w.wcls);
  return o;
}

}  // namespace akv
