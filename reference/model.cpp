#include "reference/model.hpp"

#include <map>
#include <mutex>

namespace akv {

std::shared_ptr<const Model> make_model(const Config& cfg, uint64_t seed) {
  auto m = std::make_shared<Model>();
  m->config = cfg;
  m->weights = make_synthetic_weights(cfg, seed);
  m->rope = std::make_shared<const RopeTable>(make_rope_table(cfg.head_dim, cfg.rope_theta, cfg.max_ctx));
  return m;
}

bool has_dense_weights(const Model& m) { return m.stored == nullptr || !m.weights.tok_emb.empty(); }

Weights<float> dense_weights(const Model& m) {
  if (has_dense_weights(m)) return m.weights;
  const StoredWeights& s = *m.stored;
  Weights<float> w;
  w.tok_emb = s.dense(s.tok_emb);
  for (size_t l = 0; l < s.layers.size(); ++l) {
    const StoredLayer& L = s.layers[l];
    const LayerWeights<float>& norms = m.weights.layers.at(l);
    w.layers.push_back({norms.attn_norm, s.dense(L.wq), s.dense(L.wk), s.dense(L.wv), s.dense(L.wo), norms.ffn_norm,
                        s.dense(L.w1), s.dense(L.w2), s.dense(L.w3)});
  }
  w.final_norm = m.weights.final_norm;
  if (!s.wcls.empty()) w.wcls = s.dense(s.wcls);
  return w;
}

std::shared_ptr<const Model> dense_model(const std::shared_ptr<const Model>& m) {
  if (!m || has_dense_weights(*m)) return m;
  static std::mutex mu;
  static std::map<const Model*, std::weak_ptr<const Model>> cache;
  std::lock_guard<std::mutex> g(mu);
  for (auto it = cache.begin(); it != cache.end();) it = it->second.expired() ? cache.erase(it) : std::next(it);
  auto& slot = cache[m.get()];
  if (auto d = slot.lock()) return d;
  auto d = std::make_shared<Model>();
  d->config = m->config;
  d->weights = dense_weights(*m);
  d->rope = m->rope;
  d->stored = m->stored;
  // Keep the stored model alive with its dense copy: the key is its address.
  std::shared_ptr<const Model> out(d.get(), [d, m](const Model*) {});
  slot = out;
  return out;
}

}  // namespace akv
