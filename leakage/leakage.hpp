// What approximate eviction leaks (spec/leakage.md L9): each policy (keep, mask, kshift,
// exact) runs on a copy of the same poisoned session through the same backend and is measured
// against the never-shown session: next-token logits after the generation prompt, a greedy
// continuation, the injected strings it repeats, and the price of each policy.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "reference/chat.hpp"
#include "reference/policy.hpp"
#include "runtime/backends.hpp"

namespace akv {

struct LeakageOptions {
  std::string model = "smollm2";  // a name or path load_model (runtime/models.hpp) resolves
  uint64_t seed = 1;
  std::string backend = "cpu";
  BackendOptions backend_options;  // the cpu backend's ISA and threads
  std::vector<EvictPolicy> policies = all_policies();
  size_t continuation = 64;        // greedy tokens decoded per session
  std::vector<size_t> evict;       // message indexes; empty: the conversation's "poisoned" list
  bool positions = true;           // also measure the cost of evicting the start, middle, end message
  /// L10: strings the caller knows are secret (an expired API key): searched for in every
  /// continuation, reported by number ("secret 1"), never repeated in a report.
  std::vector<std::string> secrets;
};

/// One policy against never-shown (L9).
struct PolicyResult {
  EvictPolicy policy = EvictPolicy::kExact;
  float max_abs = 0;            // max|q - p| of the next-token logits; NaN when not comparable (A5)
  size_t non_finite = 0;        // NaN / Inf next-token logits of the two runs (A5: never a pass)
  double kl = 0;                // KL(never || policy), binary64
  bool top1_agree = false;
  size_t rank_of_never_top = 0; // 0: never's top token is the policy's top too
  bool logits_identical = false;
  std::vector<int32_t> continuation;
  std::string continuation_text;
  int64_t first_diff = -1;       // first index where the continuation differs from never's; -1: none
  std::vector<std::string> found;  // injected strings in continuation_text
  std::vector<size_t> secrets_found;  // L10: 1-based numbers of the secrets in continuation_text
  bool prefix_untouched = false;   // L8: K/V bytes of [0, truncated_at) unchanged
  size_t truncated_at = 0, tokens_evicted = 0, tokens_recomputed = 0;
  double ms_evict = 0;
};

/// The price of one policy when the evicted message sits at `where` (start, middle, end).
struct CostResult {
  std::string where;
  size_t message = 0, tokens_evicted = 0;
  EvictPolicy policy = EvictPolicy::kExact;
  size_t tokens_recomputed = 0;
  double ms_evict = 0;
  size_t tokens_rebuild = 0;  // a full rebuild without the message: its tokens and wall time
  double ms_rebuild = 0;
};

struct LeakageReport {
  std::string file, model, model_source, backend;
  std::string isa;  // the backend's ISA and threads, from Backend::describe()
  std::vector<size_t> evicted;
  size_t messages = 0, tokens_poisoned = 0, tokens_never = 0;
  size_t span_start = 0;          // f: the first evicted entry
  std::vector<std::string> candidates;  // strings of the evicted messages (L9)
  std::vector<int32_t> never_continuation;
  std::string never_continuation_text;
  std::vector<std::string> never_found;  // the control: injected strings never-shown produces
  size_t secrets = 0;                    // L10: how many secrets were searched for
  std::vector<size_t> never_secrets_found;
  double ms_build_poisoned = 0, ms_build_never = 0;  // ms_build_never: the full rebuild
  std::vector<PolicyResult> policies;
  std::vector<CostResult> costs;  // start, middle, end x policies (opt.positions)
  /// L5: exact leaked nothing (when exact was measured).
  bool exact_ok() const;
};

/// Measures `conv` (read from `file`, for the report). Throws Error(kBadInput) when there is
/// nothing to evict, an index is out of range or repeated, or every message would be evicted;
/// kContextOverflow when the conversation plus prompt plus continuation does not fit;
/// kUnknownModel / kUnknownBackend / kBackendUnavailable as the witness does; kBadInput for an
/// empty secret.
LeakageReport run_leakage(const Conversation& conv, const std::string& file, const LeakageOptions& opt);

/// L9's numbers of two next-token logit rows p (never) and q (policy), (vocab,) each.
struct LogitsCompare {
  float max_abs = 0;      // NaN when a value is not finite (A5)
  size_t non_finite = 0;  // NaN / Inf logits in p and q together
  double kl = 0;
  bool top1_agree = false;
  size_t rank = 0;
  bool identical = false;
};
LogitsCompare compare_next(const std::vector<float>& p, const std::vector<float>& q);

/// Lowest index of the maximum of x (n >= 1).
size_t argmax(const std::vector<float>& x);

}  // namespace akv
