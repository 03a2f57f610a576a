// The base of the tests' deliberately broken backends: the reference backend under another
// name, everything forwarded; a subclass overrides forward_rows() to break one promise.
#pragma once
#include <memory>
#include <cmath>
#include <optional>
#include <span>
#include <vector>
#include <string>
#include <utility>

#include "reference/backend.hpp"
#include "reference/kv_cache.hpp"

namespace akv::test {

class WrappedReference : public Backend {
 public:
  WrappedReference(std::shared_ptr<const Model> m, std::string name)
      : inner_(make_reference_backend(std::move(m))), name_(std::move(name)) {}
  std::string name() const override { return name_; }
  const Model& model() const override { return inner_->model(); }
  BackendDescription describe() const override {
    BackendDescription d = inner_->describe();
    d.name = name_;
    return d;
  }
  void set_scratch_poison(std::optional<float> v) override { inner_->set_scratch_poison(v); }

 protected:
  std::unique_ptr<Backend> inner_;

 private:
  std::string name_;
};

// A backend that breaks I1: a call of several tokens nudges the first token's layer-0 key
// by one ulp, so its bits depend on how tokens were grouped into calls.
class ChunkSensitive final : public WrappedReference {
 public:
  explicit ChunkSensitive(std::shared_ptr<const Model> m) : WrappedReference(std::move(m), "chunk-sensitive") {}
  void forward_rows(KVCache& c, std::span<const Token> t, RowList rows, std::span<float> l) override {
    const size_t first = c.size();
    inner_->forward_rows(c, t, rows, l);
    if (t.size() > 1) c.k(0)[first * c.kv_dim()] = std::nextafter(c.k(0)[first * c.kv_dim()], INFINITY);
  }
};

// An eviction that rebuilds the whole cache from position 0: after the session truncates the
// cache, this backend truncates it to 0 and re-runs every earlier token with the new ones. The
// bits are right (I1), and the session still reports |X| recomputed: only the cache's own
// write record tells it from akv's eviction.
class RebuildsFromZero final : public WrappedReference {
 public:
  explicit RebuildsFromZero(std::shared_ptr<const Model> m) : WrappedReference(std::move(m), "rebuilds-from-zero") {}
  void forward_rows(KVCache& c, std::span<const Token> t, RowList rows, std::span<float> l) override {
    if (c.size() >= history_.size()) {
      inner_->forward_rows(c, t, rows, l);
      history_.insert(history_.end(), t.begin(), t.end());
      return;
    }
    const size_t f = c.size();
    history_.resize(f);
    history_.insert(history_.end(), t.begin(), t.end());
    std::vector<uint32_t> all_rows;
    for (size_t j = 0; j < (rows.empty() ? t.size() : rows.size()); ++j)
      all_rows.push_back(static_cast<uint32_t>(f + (rows.empty() ? j : rows[j])));
    c.truncate(0);
    inner_->forward_rows(c, history_, all_rows, l);
  }

 private:
  std::vector<Token> history_;  // the tokens of the cache's entries
};

}  // namespace akv::test
