// The eviction policies (spec/leakage.md L1): akv's exact eviction and the approximations
// production engines use, run through the same Session and Backend so that only the policy
// differs between them.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace akv {

enum class EvictPolicy {
  kKeep,    // L2: nothing is evicted; the span stays and is read
  kMask,    // L3: the span stays in the cache; no later query attends to it
  kKShift,  // L4: the span's rows are deleted, later keys re-rotated, nothing recomputed
  kExact,   // O3: truncate at the span and recompute every later token (E1)
};

/// "keep", "mask", "kshift", "exact".
const char* policy_name(EvictPolicy p);

/// The policy named `name`. Error kBadInput ("unknown policy 'x' (keep, mask, kshift, exact)").
EvictPolicy parse_policy(std::string_view name);

/// A comma-separated list of policy names, in the order given, no repeats, at least one.
/// Error kBadInput for an empty list, an empty or unknown name, or a repeat.
std::vector<EvictPolicy> parse_policies(std::string_view list);

/// Every policy, in the order of the table: keep, mask, kshift, exact.
std::vector<EvictPolicy> all_policies();

/// policy_name() of every policy, in the order of all_policies().
std::vector<std::string> policy_names();

}  // namespace akv
