// Runs one shard of a property campaign (spec/campaign.md CP2, CP3): the selected properties
// of the suite (verify/props, spec/properties.md) for the shard's share of the cases, under
// the shard's seed, printing progress; a failure is shrunk, its reproduce string kept and its
// counterexample written beside the shard's result file.
#pragma once
#include <ostream>
#include <string>
#include <vector>

#include "campaign/result.hpp"
#include "campaign/shard.hpp"
#include "verify/props/harness.hpp"

namespace akv::campaign {

/// The properties whose id equals, whose suite equals, or whose id contains one of `wanted`
/// (all of them when it is empty), in the registry's order. Throws Error(kBadInput) listing
/// every property when none matches.
std::vector<const prop::PropertyDef*> select_properties(const std::vector<std::string>& wanted);

/// One shard to run.
struct Plan {
  uint64_t seed = 0;                      // the campaign's seed
  int cases = 1000;                       // per property, over all shards
  std::string backend = "reference";      // runtime/backends.hpp name
  std::string profile = "ci";             // verify/gen/profile.hpp name
  std::vector<std::string> properties;    // as select_properties takes them
  Shard shard;                            // which shard
  std::string out = "campaign-results";   // the result file and counterexamples go here
};

/// Runs `plan` and writes its result file (returned, with its path in `*path` when given).
/// `ctx` gives the backend factory and knobs (the suite's tests pass broken backends); its
/// backend and profile are set from the plan. Progress, each property's verdict and any
/// failure's reproduce line, counterexample and re-run go to `log`.
/// Throws Error(kBadInput) for an unknown backend, profile or property, cases fewer than the
/// shards, or an --out that cannot be written.
ShardResult run_shard(const Plan& plan, prop::Context ctx, std::ostream& log, std::string* path = nullptr);

}  // namespace akv::campaign
