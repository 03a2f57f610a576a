// The backend interface (DESIGN.md §5, spec/operations.md O1): a backend only computes.
// Spans, truncation, re-append and counting live once, in Session.
#pragma once
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "reference/kv_cache.hpp"
#include "reference/model.hpp"

namespace akv {

/// One append of a batch: a session's cache, its new tokens (m,) and their logits (m, vocab),
/// with the preconditions of Backend::forward. The caches of one batch are distinct.
struct BatchItem {
  KVCache* cache = nullptr;
  std::span<const Token> tokens;
  std::span<float> logits;
};

class Backend {
 public:
  virtual ~Backend() = default;

  /// "reference", "cpu", ...
  virtual std::string name() const = 0;
  virtual const Model& model() const = 0;

  /// Runs `tokens` (m,) at positions [cache.size(), cache.size() + m): appends their K/V to
  /// `cache` and writes their logits to `logits` (m, vocab), row i for tokens[i].
  /// Preconditions (Session checks them): m >= 1, cache.size() + m <= max_ctx,
  /// every token in [0, vocab), logits.size() == m * vocab.
  /// I1: the bits written depend only on the model and the token sequence [0, pos].
  virtual void forward(KVCache& cache, std::span<const Token> tokens, std::span<float> logits) = 0;

  /// Several appends (of different sessions) in one call. I1: each item's bits are exactly
  /// what forward() gives it alone. This default runs them one by one; a backend may fuse them.
  virtual void forward_batch(std::span<const BatchItem> items) {
    for (const BatchItem& it : items) forward(*it.cache, it.tokens, it.logits);
  }

  /// Fills every scratch buffer with `value` before each forward call (NaN in debug builds
  /// and tests), or with nothing when unset. Results must not change (I1).
  virtual void set_scratch_poison(std::optional<float> value) = 0;
};

/// The default scratch poison: quiet NaN in debug builds or when AKV_POISON_SCRATCH is set.
std::optional<float> default_scratch_poison();

/// The scalar float32 reference backend (reference/forward.hpp).
std::unique_ptr<Backend> make_reference_backend(std::shared_ptr<const Model> model);

}  // namespace akv
