#include "verify/check/models.hpp"

#include <map>
#include <mutex>

namespace akv::check {

std::shared_ptr<const Model> tiny_model() {
  static const auto m = make_model(config_by_name("tiny"), 1);
  return m;
}

std::shared_ptr<const Model> small_model(uint64_t seed) {
  static std::mutex mu;
  static std::map<uint64_t, std::shared_ptr<const Model>> models;
  std::lock_guard<std::mutex> lock(mu);
  auto& m = models[seed];
  if (!m) m = make_model(config_by_name("small"), seed);
  return m;
}

}  // namespace akv::check
