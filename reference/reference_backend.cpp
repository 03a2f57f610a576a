#include <algorithm>
#include <cstdlib>
#include <limits>
#include <string>

#include "reference/error.hpp"

#include "reference/backend.hpp"
#include "reference/forward.hpp"

namespace akv {

std::optional<float> default_scratch_poison() {
#ifndef NDEBUG
  return std::numeric_limits<float>::quiet_NaN();
#else
  if (std::getenv("AKV_POISON_SCRATCH")) return std::numeric_limits<float>::quiet_NaN();
  return std::nullopt;
#endif
}

void check_backend_kv_type(const Backend& backend, KvType t) {
  check_kv_type(t, backend.model().config);
  const std::vector<KvType> ok = backend.kv_types();
  if (std::find(ok.begin(), ok.end(), t) != ok.end()) return;
  std::string names;
  for (KvType x : ok) names += (names.empty() ? "" : ", ") + std::string(kv_type_name(x));
  throw Error(ErrorCode::kBadInput, "backend '" + backend.name() + "' keeps its cache as " + names + " only, not " +
                                        kv_type_name(t) + " (--kv-type; the reference and cpu backends run every type)");
}

namespace {

class ReferenceBackend final : public Backend {
 public:
  explicit ReferenceBackend(std::shared_ptr<const Model> m)
      : model_(std::move(m)), state_(model_->config), poison_(default_scratch_poison()) {}

  std::string name() const override { return "reference"; }
  const Model& model() const override { return *model_; }
  BackendDescription describe() const override { return {name(), "scalar", 1, poison_}; }
  std::vector<KvType> kv_types() const override { return {KvType::kF32, KvType::kF16, KvType::kQ8_0}; }

  void forward_rows(KVCache& cache, std::span<const Token> tokens, RowList rows, std::span<float> logits) override {
    if (poison_) state_.fill(*poison_);
    const size_t vocab = static_cast<size_t>(model_->config.vocab);
    size_t j = 0;  // next wanted row
    for (size_t i = 0; i < tokens.size(); ++i) {
      const bool want = rows.empty() || (j < rows.size() && rows[j] == i);
      ref::forward_token(*model_, cache, tokens[i], want ? logits.data() + (rows.empty() ? i : j++) * vocab : nullptr, state_);
    }
  }

  void set_scratch_poison(std::optional<float> value) override { poison_ = value; }

 private:
  std::shared_ptr<const Model> model_;
  ref::RunState<float> state_;
  std::optional<float> poison_;
};

}  // namespace

std::unique_ptr<Backend> make_reference_backend(std::shared_ptr<const Model> model) {
  return std::make_unique<ReferenceBackend>(dense_model(model));  // float32 weights (K15)
}

}  // namespace akv
