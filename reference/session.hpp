// The addressable cache: a KV cache plus its span table (spec/state.md S1-S4,
// spec/operations.md O1-O4). Written once; any Backend computes for it.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <vector>

#include "reference/backend.hpp"
#include "reference/kv_cache.hpp"

namespace akv {

using SpanId = uint64_t;

/// One live span: entries [start, start + length) of the cache (S2).
struct SpanInfo {
  SpanId id = 0;
  size_t start = 0;
  size_t length = 0;
};

/// What one eviction did (O3, E3, E4).
struct EvictStats {
  size_t truncated_at = 0;       // first position rewritten: the first evicted span's start
  size_t tokens_evicted = 0;     // |S|, summed over the evicted spans
  size_t tokens_recomputed = 0;  // |X|: survivors after truncated_at, re-run through all layers
};

/// One edit of replace(): span `id`'s tokens become `tokens`.
struct SpanEdit {
  SpanId id = 0;
  std::vector<Token> tokens;
};

/// The logits an append returns: every row (m, vocab), or only the last token's (1, vocab).
/// Only returned rows pass through the final RMSNorm and the classifier (Backend::forward_rows).
enum class LogitRows { kAll, kLast };

class Session;

/// One append of Session::append_batch: `tokens` (m >= 1) to span `id` of `session`.
struct BatchAppend {
  Session* session = nullptr;
  SpanId id = 0;
  std::span<const Token> tokens;
};

class Session {
 public:
  /// A session over `backend` (not owned; must outlive the session), empty cache of type
  /// `kv_type` (spec/state.md S5), fixed for the session's life. Error(kBadInput) when the
  /// backend does not run that type or the model's rows do not fit it (check_backend_kv_type).
  explicit Session(Backend& backend, KvType kv_type = KvType::kF32);

  /// O2. Appends `tokens` (m >= 1) to span `id` at positions [size(), size() + m) and returns
  /// their logits: (m, vocab) for LogitRows::kAll, the last row (1, vocab) for kLast. `id` is new (a span opened at the tail) or the last live span
  /// (extended: decode). Errors, session unchanged: kEmptyInput (m == 0), kInvalidToken,
  /// kContextOverflow (size() + m > max_ctx), kSpanEvicted, kSpanNotAtTail.
  std::vector<float> append(SpanId id, std::span<const Token> tokens, LogitRows want = LogitRows::kAll);

  /// O2 over several sessions in one backend call (Backend::forward_batch, continuous batching):
  /// item i gets the last-row logits (vocab,) that items[i].session->append(id, tokens, kLast)
  /// gives alone (I1), and its session changes as that append changes it. The sessions are
  /// distinct and share one backend. Errors, every session unchanged: those of append for any
  /// item (checked for all before anything runs; the message names the item), kBadInput for a
  /// session named twice or sessions over different backends. A failed backend call truncates
  /// every cache back.
  static std::vector<std::vector<float>> append_batch(std::span<const BatchAppend> items);

  /// O3. Evicts the spans `ids` at once: truncates the cache at the first one's start and
  /// re-runs every surviving later token, with its span id, at its new position. Entries
  /// before the first evicted span are not touched (E3); exactly |X| tokens are recomputed
  /// (E4). Errors, session unchanged: kEmptyInput (no ids), kDuplicateSpan, kSpanEvicted,
  /// kUnknownSpan.
  EvictStats evict(std::span<const SpanId> ids);
  EvictStats evict(SpanId id) { return evict(std::span<const SpanId>(&id, 1)); }

  /// The approximate policies' first hook (spec/leakage.md L1, run by leakage/approx_evict):
  /// checks `ids` as evict(ids) does (the same errors, session unchanged) and returns the
  /// named spans in cache order.
  std::vector<SpanInfo> spans_to_evict(std::span<const SpanId> ids) const;

  /// What an approximate eviction leaves of the evicted spans in the span table.
  enum class EvictedRows {
    kKept,     // L3: their rows, tokens and entry spans stay; later positions do not move
    kDropped,  // L4: they leave; every later span moves down over them
  };

  /// The approximate policies' one write (spec/leakage.md L3, L4): checks `ids` as evict(ids)
  /// does (the same errors, session unchanged), lets `edit` change the cache's entries in
  /// place (nothing is recomputed; for kDropped it must move the later entries down over the
  /// spans' as the table moves), then counts the spans as evicted (no append, no second
  /// eviction). A moved span keeps the last logits it had (S3), computed before the eviction.
  void evict_in_place(std::span<const SpanId> ids, EvictedRows rows, const std::function<void(KVCache&)>& edit);

  /// O10. Replaces the tokens of the live spans `edits` name (a redaction: a message re-encoded
  /// without a string): truncates the cache at the first edited span's start f and re-runs, in
  /// one backend call, every entry from f on with its span id at its new position: the edited
  /// spans' new tokens and every surviving later span's. Entries before f are not touched
  /// (E3); the counter grows by the tokens re-run. Stats: truncated_at = f, tokens_evicted =
  /// the edited spans' old tokens, tokens_recomputed = the entries re-run. Errors, session
  /// unchanged: kEmptyInput (no edits, or an edit with no tokens), kDuplicateSpan,
  /// kSpanEvicted, kUnknownSpan, kInvalidToken, kContextOverflow.
  EvictStats replace(std::span<const SpanEdit> edits);

  /// O4. Next-token logits (vocab,): the logits of the last cached token.
  /// Error kEmptyCache when the cache is empty.
  std::span<const float> logits() const;

  const KVCache& cache() const { return cache_; }
  /// The cache type (S5): the constructor's, never changed.
  KvType kv_type() const { return cache_.type(); }
  const Model& model() const { return backend_->model(); }
  size_t size() const { return cache_.size(); }
  /// Token ids and span ids of the entries, (size(),) each (S1).
  const std::vector<Token>& tokens() const { return tokens_; }
  const std::vector<SpanId>& entry_spans() const { return entry_span_; }
  /// Live spans in cache order (S2).
  const std::vector<SpanInfo>& spans() const { return spans_; }
  bool is_evicted(SpanId id) const { return evicted_.count(id) != 0; }
  const std::set<SpanId>& evicted() const { return evicted_; }
  /// Total tokens re-run by evictions over the session's life (E4).
  uint64_t tokens_recomputed() const { return recomputed_; }

 private:
  void check_tokens(std::span<const Token> tokens) const;
  // append's checks (O6); true when `id` is the last span (it grows).
  bool check_append(SpanId id, std::span<const Token> tokens) const;
  // append's bookkeeping after the backend appended `tokens` at [start, ...): `last` is the
  // last row's logits (vocab,).
  void record_append(SpanId id, std::span<const Token> tokens, size_t start, bool extend, std::span<const float> last);
  // Validates an eviction request (O6 errors); returns the index in spans_ of its first span.
  size_t check_evict(std::span<const SpanId> ids, std::set<SpanId>& doomed) const;
  // The spans from spans_[first] on but `gone`, in cache order, placed from f = spans_[first].start
  // on: their tokens x (a span `edits` names with its new tokens), `moved` (each at its new
  // start) and `index` (its row in spans_, for the kept logits of a span not re-run).
  struct Tail {
    std::vector<Token> x;
    std::vector<SpanInfo> moved;
    std::vector<size_t> index;
  };
  Tail tail_without(size_t first, const std::set<SpanId>& gone, const std::map<SpanId, const SpanEdit*>& edits = {}) const;
  // O3/O10's tail, and L4's table: keeps spans_[0, first), truncates the cache at `from`
  // (>= f) and re-runs t.x[from - f, ...) at positions from, ...; spans placed before `from`
  // (by a backend's edit, GT6, or in place, L4) keep the logits computed before.
  void rerun_tail(size_t first, size_t from, const Tail& t);
  // GT6: r when a backend's own evict op edited the cache for the g evicted entries from
  // spans_[first].start = f and placed the survivors [f, r) itself; f when it did not.
  size_t placed_by_backend(size_t first, const std::set<SpanId>& doomed, size_t g);
  // Runs tokens at the tail; returns the logits of `rows` (empty: every row).
  std::vector<float> run(std::span<const Token> tokens, RowList rows);

  Backend* backend_;
  KVCache cache_;
  std::vector<Token> tokens_;
  std::vector<SpanId> entry_span_;
  std::vector<SpanInfo> spans_;
  std::vector<std::vector<float>> span_last_logits_;  // parallel to spans_: (vocab,) each
  std::set<SpanId> evicted_;
  uint64_t recomputed_ = 0;
};

}  // namespace akv
