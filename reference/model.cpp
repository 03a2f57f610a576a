#include "reference/model.hpp"

#include <map>
#include <mutex>

namespace akv {

std::shared_ptr<const Model> make_model(const Config& cfg, uint64_t seed) {
  auto m = std::make_shared<Model>();
  m->config = cfg;
  m->weights = make_synthetic_weights(cfg, seed);
  m->rope = make_global_rope(cfg);
  m->rope_local = make_local_rope(cfg);
  return m;
}

std::shared_ptr<const RopeTable> make_global_rope(const Config& c) {
  return std::make_shared<const RopeTable>(make_rope_table(c.head_dim, c.rope_theta, c.max_ctx, c.rope_freq_factors));
}

std::shared_ptr<const RopeTable> make_local_rope(const Config& c) {
  if (c.sliding_window == 0 || c.rope_theta_local == 0.0f || c.rope_theta_local == c.rope_theta) return nullptr;
  // The sliding layers' base is a plain one: frequency factors (M20) scale the global table only.
  return std::make_shared<const RopeTable>(make_rope_table(c.head_dim, c.rope_theta_local, c.max_ctx));
}

bool has_dense_weights(const Model& m) { return m.stored == nullptr || !m.weights.tok_emb.empty(); }

Weights<float> dense_weights(const Model& m) {
  if (has_dense_weights(m)) return m.weights;
  const StoredWeights& s = *m.stored;
  Weights<float> w;
  w.tok_emb = s.dense(s.tok_emb);
  for (size_t l = 0; l < s.layers.size(); ++l) {
    const StoredLayer& L = s.layers[l];
    LayerWeights<float> d = m.weights.layers.at(l);  // the norms, biases and QK-norms (M14-M16): float32 already
    d.wq = s.dense(L.wq), d.wk = s.dense(L.wk), d.wv = s.dense(L.wv), d.wo = s.dense(L.wo);
    d.w1 = s.dense(L.w1), d.w2 = s.dense(L.w2), d.w3 = s.dense(L.w3);
    w.layers.push_back(std::move(d));
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
  d->rope_local = m->rope_local;
  d->stored = m->stored;
  // Keep the stored model alive with its dense copy: the key is its address.
  std::shared_ptr<const Model> out(d.get(), [d, m](const Model*) {});
  slot = out;
  return out;
}

}  // namespace akv
