// Deliberately broken backends: the property suite must catch each and shrink its
// counterexample to a small case (the suite's own teeth).
#pragma once
#include <cstring>
#include <memory>

#include "reference/backend.hpp"

namespace akv::test {

enum class Mutation {
  kChunkSensitive,  // breaks I1: the first logit of a call of m >= 2 tokens is one ulp off
  kWarmState,       // breaks I1/E1: every call after a backend's first flips a bit of layer-0 K
};

/// The reference backend with `m` applied to its results.
class MutantBackend final : public Backend {
 public:
  MutantBackend(std::shared_ptr<const Model> model, Mutation m) : inner_(make_reference_backend(std::move(model))), m_(m) {}
  std::string name() const override { return "mutant"; }
  const Model& model() const override { return inner_->model(); }
  void set_scratch_poison(std::optional<float> v) override { inner_->set_scratch_poison(v); }
  void forward_rows(KVCache& cache, std::span<const Token> tokens, RowList rows, std::span<float> logits) override {
    const size_t first = cache.size();
    inner_->forward_rows(cache, tokens, rows, logits);
    if (m_ == Mutation::kChunkSensitive && tokens.size() >= 2) flip(logits[0]);
    if (m_ == Mutation::kWarmState && calls_++ > 0) flip(cache.k(0)[first * static_cast<size_t>(cache.kv_dim())]);
  }

 private:
  static void flip(float& x) {
    uint32_t b;
    std::memcpy(&b, &x, 4);
    b ^= 1u;
    std::memcpy(&x, &b, 4);
  }
  std::unique_ptr<Backend> inner_;
  Mutation m_;
  int calls_ = 0;
};

}  // namespace akv::test
