#include "reference/model.hpp"

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

}  // namespace akv
