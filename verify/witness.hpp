// The auditor's witness (spec/operations.md O5): build a conversation with its poisoned spans,
// evict them, build it again without them, and compare bit for bit. Its claims about the
// prefix and the cost are measured on the cache, never taken from the session's statistics.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "reference/backend.hpp"
#include "reference/chat.hpp"
#include "reference/chat_encoder.hpp"
#include "reference/session.hpp"
#include "reference/policy.hpp"
#include "runtime/backends.hpp"
#include "verify/redact.hpp"

namespace akv {

using WitnessProgress = std::function<void(const std::string& phase, size_t done, size_t total)>;

/// Evicts spans from a session under a non-exact policy (spec/leakage.md L2-L4): the leakage
/// room's evict_under (leakage/approx_evict.hpp), handed in by the caller because that room
/// sits above verify/ in the layer order. The witness measures it as it measures exact.
using ApproxEvict = std::function<EvictStats(Session&, std::span<const SpanId>, EvictPolicy)>;

struct WitnessOptions {
  std::string model = "smollm2";  // a name or path load_model (runtime/models.hpp) resolves: the real model by default (synthetic ones only when named)
  uint64_t seed = 1;
  std::string backend = "cpu";  // the default: the cpu backend passes the suite
  /// The cache type of every session the witness builds (spec/state.md S5): E1, E3 and I1 are
  /// claims within one type; the provenance block records it.
  KvType kv_type = KvType::kF32;
  BackendOptions backend_options;  // the cpu backend's ISA and threads
  std::vector<size_t> evict;  // message indexes; empty: the conversation's "poisoned" list
  /// O10: strings removed from inside messages instead of an eviction (exact policy only; not
  /// with `evict`): the edited messages are re-run from their start, the never-shown run is the
  /// conversation rendered without the strings.
  std::vector<Redaction> redact;
  /// How the spans are removed (spec/leakage.md L1): akv's exact eviction, or an approximation
  /// run beside it for comparison. A non-exact policy leaves stale logits, so both sessions
  /// then append the reply prompt (L9) and its logits are compared; the witness reports how
  /// far the policy is from never-shown and exits 1 unless it is bitwise equal.
  EvictPolicy policy = EvictPolicy::kExact;
  /// How a non-exact `policy` evicts (evict_under); unset, such a policy is refused
  /// (kBadInput). Not an option of the run: the provenance block records only `policy`.
  ApproxEvict approximate;
  /// The rows whose logits each append computes (spec/operations.md O7): the last, as an engine
  /// asks (default), or all, as the property suite's sessions do, so that a counterexample of a
  /// property replays here with the same calls (a kernel whose bits follow M shows only so).
  LogitRows logit_rows = LogitRows::kLast;
  /// O5: the never-shown run is built again under a second configuration (another thread
  /// count and another ISA where the machine has one, scratch poisoned with NaN) and must give
  /// the same bits, so invariance is part of the certificate. true: one configuration only,
  /// reported as the weaker claim.
  bool same_config = false;
  /// The second configuration's threads and ISA; 0 / "": chosen by cross_config_options().
  int cross_threads = 0;
  std::string cross_isa;
  /// Called (when set) as each phase advances: its name ("poisoned run", "eviction",
  /// "never-shown run", "never-shown run again"), tokens done and the phase's total. Not an
  /// option of the run: no result depends on it and the provenance block does not record it.
  WitnessProgress progress;
};

/// The second configuration of the witness (O5) for `backend` run as `first`: for cpu, another
/// thread count (1 if it ran more, else 2) and another ISA this CPU runs (a native one first,
/// then avx512_simde, then portable); for a kernel library (`kernels`, or `--kernels`) another
/// thread count the same way; for the other backends the same options (only the scratch
/// poison differs). `cross_threads` / `cross_isa` override the choice.
BackendOptions cross_config_options(const std::string& backend, const BackendDescription& first, const BackendOptions& options,
                                    int cross_threads = 0, const std::string& cross_isa = "");

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
  std::string kv_type = "f32";  // the cache type of every session (spec/state.md S5)
  uint64_t seed = 0;
  std::vector<size_t> evicted;  // message indexes, ascending (a redaction: the edited messages)
  std::vector<RedactionCount> redacted;  // O10: what each redaction removed (never the string)
  size_t tokens_inserted = 0;   // O10: the edited messages' tokens after the redaction
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
  float evict_vs_never_max_abs = 0;   // E1: must be 0; NaN when not comparable (a non-finite value, A5)
  float poison_vs_never_max_abs = 0;  // E2: the control, > 0; NaN when not comparable
  bool control_moved = false;         // E2 measured: poison-vs-never comparable and > 0, else the check proves nothing
  /// A5: where a NaN or an Inf first appears in any logits or cache the witness compared
  /// ("" when every value is finite): which run, the row, and the first op step of a replay.
  std::string non_finite;
  std::string cache_sha256_evicted, cache_sha256_never;
  std::string logits_sha256_evicted, logits_sha256_never, logits_sha256_poisoned;
  double ms_build_poisoned = 0, ms_evict = 0, ms_build_never = 0;
  std::vector<std::string> ignored_fields;  // the conversation's fields that never reach a model (IN2)
  // O5's second configuration: the never-shown run built again there.
  bool same_config = false;           // --same-config: not run (the weaker, one-configuration claim)
  std::string cross_config;           // its ISA, threads and scratch ("avx2, 1 thread, scratch NaN")
  bool cross_config_identical = false;  // caches and logits bitwise equal to the first configuration's
  std::string cross_config_diff;      // where they differ first ("" when identical)
  double ms_build_cross = 0;

  /// E1: caches and next-token logits bitwise equal.
  bool exact() const { return caches_identical && logits_identical; }
  /// The cost claim, measured: the eviction wrote exactly what its policy may (E4).
  bool writes_as_expected() const { return tokens_recomputed == writes_expected; }
  /// Exit 0 condition (O5): every value finite (A5), exact, the control moved (E2: not
  /// vacuous), the prefix untouched (E3) and the writes as expected (E4).
  bool passed() const {
    return non_finite.empty() && exact() && control_moved && prefix_untouched && writes_as_expected() &&
           (same_config || cross_config_identical);
  }
};

/// The message indexes to evict, ascending: `evict`, or the conversation's "poisoned" list
/// when empty. Error(kBadInput) when the conversation has no messages, there is nothing to
/// evict, an index is out of range or repeated, or every message would be evicted.
std::vector<size_t> checked_evict_indexes(const Conversation& conv, const std::vector<size_t>& evict);

/// spec/operations.md O8: an eviction is certified only against a never-shown run that a real
/// rendering produces. Throws Error(kBadInput) naming the messages when `encoder` renders the
/// conversation without `doomed` otherwise than `enc`'s spans without them: evicting a
/// system message for which the template substitutes its default system prompt, or any span
/// the template adds or changes by context (a BOS, a default tool preamble).
void check_never_shown_rendering(const ChatEncoder& encoder, const Conversation& conv, const EncodedConversation& enc,
                                 const std::set<size_t>& doomed);

/// Appends `enc` to `s` as the witness does: the preamble (span kPreambleSpan), then every
/// message whose index is not in `skip` (span id = index), logits of each span's last row only
/// (or of every row: `rows`). `progress` (may be empty) is called after each span with
/// `phase`, the tokens appended and their total.
void build_session(Session& s, const EncodedConversation& enc, const std::set<size_t>& skip = {},
                   LogitRows rows = LogitRows::kLast, const WitnessProgress& progress = {}, const std::string& phase = "");

/// Runs the witness. Throws Error(kBadInput) when there is nothing to evict, an index is
/// out of range or repeated, or every message would be evicted; kInvalidToken for a raw
/// token id outside the vocabulary (naming the file, message and token index);
/// kContextOverflow when the conversation does not fit the model's context; kUnknownModel,
/// kUnknownBackend or kBackendUnavailable (make_backend) for a bad model or backend.
WitnessReport run_witness(const Conversation& conv, const WitnessOptions& opt);

/// Makes a backend over a model; the witness makes two (poisoned and never-shown sessions).
using BackendFactory = std::function<std::unique_ptr<Backend>(std::shared_ptr<const Model>)>;

/// The same with the backends made by `make` (opt.backend is then only a label): how tests
/// show that the witness catches a backend that breaks I1. `make_cross` makes the second
/// configuration's backend; when empty, the report is the one-configuration claim (same_config).
WitnessReport run_witness(const Conversation& conv, const WitnessOptions& opt, const BackendFactory& make,
                          const BackendFactory& make_cross = {});

/// The report as one JSON object (keys as the fields above, plus "exact", "writes_as_expected", "passed"). Dump it with
/// json::error_handler_t::replace: it is valid JSON whatever bytes it carries (IN6).
nlohmann::json to_json(const WitnessReport& r);

/// The report as a few human-readable lines.
std::string to_text(const WitnessReport& r);

}  // namespace akv
