// Deliberately broken backends: the property suite must catch each and shrink its
// counterexample to the smallest case (the suite's own teeth). Kernel defects come from the
// catalog of broken kernels (plugins/broken); these two stay backend mutants: each flips a bit
// of what the backend returns whatever the input (a rounding defect need not show on the
// smallest case, two tokens of id 0), and the warm state is per backend object, where a kernel
// library's state is per process, shared by every backend of a case.
#pragma once
#include <cstring>
#include <memory>

#include "../wrapped_backend.hpp"
#include "reference/backend.hpp"

namespace akv::test {

enum class Mutation {
  kChunkSensitive,  // breaks I1: the first logit of a call of m >= 2 tokens is one ulp off
  kWarmState,       // breaks I1/E1: every call after a backend's first flips a bit of layer-0 K
};

/// The reference backend with `m` applied to its results.
class MutantBackend final : public WrappedReference {
 public:
  MutantBackend(std::shared_ptr<const Model> model, Mutation m) : WrappedReference(std::move(model), "mutant"), m_(m) {}
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
  Mutation m_;
  int calls_ = 0;
};

}  // namespace akv::test
