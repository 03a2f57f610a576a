// The auditor's witness (spec/operations.md O5): build a conversation with its poisoned spans,
// evict them, build it again without them, and compare bit for bit. Its claims about the
// prefix and the cost are measured on the cache, never taken from the session's statistics.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "reference/backend.hpp"
#include "reference/chat.hpp"
#include "reference/chat_encoder.hpp"
#include "reference/session.hpp"
#include "reference/policy.hpp"
#include "verify/backends.hpp"

namespace akv {

struct WitnessOptions {
  std::string model = "tiny";   // a name or path load_model (verify/models.hpp) resolves
  uint64_t seed = 1;
  std::string backend = "cpu";  // the default since the cpu backend passes the suite (issue 5)
  BackendOptions backend_options;  // the cpu backend's ISA and threads
  std::vector<size_t> evict;  // message indexes; empty: the conversation's "poisoned" list
  /// How the spans are removed (spec/leakage.md L1): akv's exact eviction, or an approximation
  /// run beside it for comparison. A non-exact policy leaves stale logits, so both sessions
  /// then append the reply prompt (L9) and its logits are compared; the witness reports how
  /// far the policy is from never-shown and exits 1 unless it is bitwise equal.
  EvictPolicy policy = EvictPolicy::kExact;
  /// The rows whose logits each append computes (spec/operations.md O7): the last, as an engine
  /// asks (default), or all, as the property suite's sessions do, so that a counterexample of a
  /// property replays here with the same calls (a kernel whose bits follow M shows only so).
  LogitRows logit_rows = LogitRows::kLast;
};

/// The span id of a conversation's preamble (EncodedConversation::preamble): never evicted.
inline constexpr uint64_t kPreambleSpan = UINT64_MAX;

struct WitnessReport {
  std::string model, backend;
  std::string policy = "exact";  // the eviction policy run (spec/leakage.md L1)
  size_t tokens_probe = 0;       // non-exact policies: reply-prompt tokens appended to both before comparing
  std::string model_source;     // "synthetic, seed 1" or the model file read
  std::string encoder;          // "fixture" or "chatml"
  size_t tokens_preamble = 0;   // template tokens before message 0 (span kPreambleSpan)
  std::string isa;              // the backend's ISA and threads, from Backend::describe() ("avx2, 2 threads")
  uint64_t seed = 0;
  std::vector<size_t> evicted;  // message indexes, ascending
  size_t messages = 0;
  size_t tokens_poisoned = 0;   // cache size with every message
  size_t tokens_never = 0;      // cache size without the evicted ones = a full rebuild's work
  // Measured by the witness, never copied from the session's EvictStats:
  size_t truncated_at = 0;            // f: the first evicted entry, from the encoded conversation
  size_t tokens_evicted = 0;          // |S|, from the encoded conversation
  size_t tokens_survivors = 0;        // |X| = tokens_never - f: the survivors after the span
  size_t tokens_recomputed = 0;       // entries the cache counted written during evict (KVCache::entries_written)
  size_t writes_expected = 0;         // what the policy may write: |X| for exact, the moved entries for kshift, 0 for mask and keep
  size_t prefix_entries_rewritten = 0;  // entries of [0, f) whose write serial changed during evict
  bool prefix_untouched = false;      // E3: bytes and write serials of [0, f) unchanged by evict
  size_t session_reported_recomputed = 0;  // what the session's EvictStats claimed (shown when it differs)
  bool caches_identical = false;      // E1: K/V bytes evicted == never
  bool logits_identical = false;      // E1: next-token logits evicted == never (memcmp)
  float evict_vs_never_max_abs = 0;   // E1: must be 0
  float poison_vs_never_max_abs = 0;  // E2: the control, > 0
  std::string cache_sha256_evicted, cache_sha256_never;
  std::string logits_sha256_evicted, logits_sha256_never, logits_sha256_poisoned;
  double ms_build_poisoned = 0, ms_evict = 0, ms_build_never = 0;
  std::vector<std::string> ignored_fields;  // the conversation's fields that never reach a model (IN2)

  /// E1: caches and next-token logits bitwise equal.
  bool exact() const { return caches_identical && logits_identical; }
  /// The cost claim, measured: the eviction wrote exactly what its policy may (E4).
  bool writes_as_expected() const { return tokens_recomputed == writes_expected; }
  /// Exit 0 condition (O5): exact, the prefix untouched (E3) and the writes as expected (E4).
  bool passed() const { return exact() && prefix_untouched && writes_as_expected(); }
};

/// The message indexes to evict, ascending: `evict`, or the conversation's "poisoned" list
/// when empty. Error(kBadInput) when the conversation has no messages, there is nothing to
/// evict, an index is out of range or repeated, or every message would be evicted.
std::vector<size_t> checked_evict_indexes(const Conversation& conv, const std::vector<size_t>& evict);

/// Appends `enc` to `s` as the witness does: the preamble (span kPreambleSpan), then every
/// message whose index is not in `skip` (span id = index), logits of each span's last row only
/// (or of every row: `rows`).
void build_session(Session& s, const EncodedConversation& enc, const std::set<size_t>& skip = {},
                   LogitRows rows = LogitRows::kLast);

/// Runs the witness. Throws Error(kBadInput) when there is nothing to evict, an index is
/// out of range or repeated, or every message would be evicted; kInvalidToken for a raw
/// token id outside the vocabulary (naming the file, message and token index);
/// kContextOverflow when the conversation does not fit the model's context; kUnknownModel,
/// kUnknownBackend or kBackendUnavailable (make_backend) for a bad model or backend.
WitnessReport run_witness(const Conversation& conv, const WitnessOptions& opt);

/// Makes a backend over a model; the witness makes two (poisoned and never-shown sessions).
using BackendFactory = std::function<std::unique_ptr<Backend>(std::shared_ptr<const Model>)>;

/// The same with the backends made by `make` (opt.backend is then only a label): how tests
/// show that the witness catches a backend that breaks I1.
WitnessReport run_witness(const Conversation& conv, const WitnessOptions& opt, const BackendFactory& make);

/// The report as one JSON object (keys as the fields above, plus "exact", "writes_as_expected", "passed"). Dump it with
/// json::error_handler_t::replace: it is valid JSON whatever bytes it carries (IN6).
nlohmann::json to_json(const WitnessReport& r);

/// The report as a few human-readable lines.
std::string to_text(const WitnessReport& r);

}  // namespace akv
