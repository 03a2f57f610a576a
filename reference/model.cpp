#include "reference/model.hpp"

namespace akv {

std::shared_ptr<const Model> make_model(const Config& cfg, uint64_t seed) {
  auto m = std::make_shared<Model>();
  m->config = cfg;
  m->weights = make_synthetic_weights(cfg, seed);
  m->rope = std::make_shared<const RopeTable>(make_rope_table(cfg.head_dim, cfg.rope_theta, cfg.max_ctx));
  return m;
}

}  // namespace akv
