// The backend interface (spec/operations.md O1): a backend only computes.
// Spans, truncation, re-append and counting live once, in Session.
#pragma once
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "reference/kv_cache.hpp"
#include "reference/model.hpp"

namespace akv {

/// Which rows of an append get logits, as llama.cpp's per-token logits flags: a strictly
/// increasing list of indexes into the append's tokens. A 49152-token vocabulary makes every
/// unread row 49152 floats and hidden x vocab FLOPs, so callers ask only for what they read.
using RowList = std::span<const uint32_t>;

/// One append of a batch: a session's cache, its new tokens (m,), the rows whose logits are
/// wanted (empty: every row) and the logits (rows, vocab), in the order of `rows`. The caches
/// of one batch are distinct.
struct BatchItem {
  KVCache* cache = nullptr;
  std::span<const Token> tokens;
  std::span<float> logits;
  RowList rows;
};

/// The logits rows of an item: `rows` or, when empty, all m of them.
inline size_t logit_row_count(const BatchItem& it) { return it.rows.empty() ? it.tokens.size() : it.rows.size(); }
/// Index into the item's tokens of its j-th logits row.
inline size_t logit_row(const BatchItem& it, size_t j) { return it.rows.empty() ? j : it.rows[j]; }

/// What a backend says about itself, for reports only (O1): nothing dispatches on it.
struct BackendDescription {
  std::string name;                     // "reference", "cpu", "cuda-emu", "cuda"
  std::string isa;                      // what runs the arithmetic: "scalar", "avx512", "avx2", "portable", "sm_90"...
  int threads = 1;                      // host threads one forward call uses
  std::optional<float> scratch_poison;  // scratch is filled with this before each call; nullopt: left as is
};

/// "avx512, 2 threads" (the description's ISA and threads, as the witness prints them).
inline std::string describe_isa_threads(const BackendDescription& d) {
  return d.isa + ", " + std::to_string(d.threads) + (d.threads == 1 ? " thread" : " threads");
}

class Backend {
 public:
  virtual ~Backend() = default;

  /// "reference", "cpu", ...
  virtual std::string name() const = 0;
  virtual const Model& model() const = 0;
  /// Name, ISA, threads and scratch policy, as this backend runs them.
  virtual BackendDescription describe() const = 0;
  /// The cache types (spec/state.md S5) this backend's forward reads and writes; a Session of
  /// another type is refused before any work. Default: f32 only.
  virtual std::vector<KvType> kv_types() const { return {KvType::kF32}; }

  /// Runs `tokens` (m,) at positions [cache.size(), cache.size() + m): appends their K/V to
  /// `cache` and writes the logits of the rows `rows` (strictly increasing indexes into
  /// tokens; empty: every row) to `logits` (rows, vocab), in the order of `rows`. Only those
  /// rows go through the final RMSNorm and the classifier.
  /// Preconditions (Session checks them): m >= 1, cache.size() + m <= max_ctx,
  /// every token in [0, vocab), rows in [0, m) increasing, logits.size() == rows * vocab.
  /// I1: the bits written depend only on the model and the token sequence [0, pos]; not on
  /// which other rows were asked for.
  virtual void forward_rows(KVCache& cache, std::span<const Token> tokens, RowList rows, std::span<float> logits) = 0;
  /// Every row: logits (m, vocab), row i for tokens[i].
  void forward(KVCache& cache, std::span<const Token> tokens, std::span<float> logits) {
    forward_rows(cache, tokens, {}, logits);
  }
  /// Several appends (of different sessions) in one call. I1: each item's bits are exactly
  /// what forward_rows() gives it alone. This default runs them one by one; a backend may fuse them.
  virtual void forward_batch(std::span<const BatchItem> items) {
    for (const BatchItem& it : items) forward_rows(*it.cache, it.tokens, it.rows, it.logits);
  }
  /// An eviction through the backend's own cache edit (spec/gate.md GT6): Session::evict calls it
  /// for one contiguous run of evicted entries [begin, end) before it recomputes anything.
  /// nullopt (this default): nothing edited, the exact path (truncate at begin, recompute every
  /// survivor). r: the backend removed the entries itself (KVCache::remove_edited(begin, end, r))
  /// and only the survivors now at positions >= r are recomputed. Error(kBadKernels) when the
  /// edit broke its contract (E3); the cache is then not usable.
  virtual std::optional<size_t> edit_for_evict(KVCache& cache, size_t begin, size_t end) {
    (void)cache, (void)begin, (void)end;
    return std::nullopt;
  }
  /// Fills every scratch buffer with `value` before each forward call (NaN in debug builds
  /// and tests), or with nothing when unset. Results must not change (I1).
  virtual void set_scratch_poison(std::optional<float> value) = 0;
};

/// The default scratch poison: quiet NaN in debug builds or when AKV_POISON_SCRATCH is set.
std::optional<float> default_scratch_poison();

/// Error(kBadInput) unless `backend` runs caches of type t and t can store model's rows
/// (check_kv_type): the message names the backend, the type and the types it runs.
void check_backend_kv_type(const Backend& backend, KvType t);

/// The scalar float32 reference backend (reference/forward.hpp); every cache type.
std::unique_ptr<Backend> make_reference_backend(std::shared_ptr<const Model> model);

}  // namespace akv
