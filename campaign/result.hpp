// What one shard of a campaign writes (spec/campaign.md CP3): the campaign it belongs to, the
// shard, per property the cases run, passed and failed with the reproduce string and the
// counterexample file, akv's version and commit, the machine and its ISA. One JSON file per
// shard, read back strictly by the merge (CP4).
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "campaign/shard.hpp"

namespace akv::campaign {

/// The format version of a shard file ("akv_campaign_shard").
inline constexpr int kShardFormat = 1;

/// What every shard of one campaign shares: the merge refuses shards that differ in any of it.
struct CampaignId {
  uint64_t seed = 0;                    // the campaign's seed (each shard derives its own, CP2)
  int cases = 0;                        // cases per property over all shards
  int shards = 1;                       // N
  std::string backend;                  // runtime/backends.hpp name
  std::string profile;                  // ci | long | real
  std::vector<std::string> properties;  // the ids run, in the registry's order
  std::string akv_version, akv_commit;  // the build
  // RapidCheck's parameters besides the seed and the count (RC_PARAMS may set them): a shard
  // with another max_size draws other cases.
  int max_size = 0, max_discard_ratio = 0;
  bool disable_shrinking = false;
  // The ISAs a cpu-backend case draws from, this machine's (empty for other backends): a shard
  // on a machine with other ISAs draws other cases.
  std::vector<std::string> isas_drawn;
};

/// One property's run in one shard.
struct PropertyResult {
  std::string id;              // "Suite.Name"
  std::string status;          // "passed" | "failed" | "gave_up" (RapidCheck discarded too many cases)
  int cases_run = 0;           // passed + failed
  int passed = 0;              // successful cases
  int failed = 0;              // 0 or 1: RapidCheck stops at the first failing case, then shrinks it
  double wall_seconds = 0;     // wall time of the property, shrinking included
  double cpu_seconds = 0;      // process CPU time (every thread) of the property
  std::string reproduce;       // the command line that replays the failure ("" when none)
  std::string counterexample;  // file name beside the result file ("" when none)
  std::string witness_args;    // `akv witness COUNTEREXAMPLE ARGS` re-runs it ("" when it does not apply)
  std::string message;         // RapidCheck's result message when not passed (at most 8 KiB)
};

/// The result file of one shard.
struct ShardResult {
  CampaignId campaign;
  Shard shard;
  uint64_t seed = 0;  // the shard's RapidCheck seed (shard_seed)
  int cases = 0;      // the shard's cases per property (shard_cases)
  std::string hostname, cpu, isa;  // isa: the best this CPU runs (the cpu backend's default)
  std::vector<std::string> isas;   // every ISA this CPU runs
  int cores = 0;                   // online CPUs
  std::string started, finished;   // UTC, ISO 8601
  double wall_seconds = 0, cpu_seconds = 0;
  std::vector<PropertyResult> properties;

  /// Every property passed every case the shard owes it.
  bool passed() const;
};

/// The shard file's JSON.
nlohmann::json to_json(const ShardResult& r);

/// Reads a shard file strictly: JSON nested at most 8 deep, no key twice, every field present
/// with its type and range, per property passed + failed = cases_run <= the shard's cases.
/// Throws Error(kBadInput) naming the file and the field.
ShardResult read_shard_file(const std::string& path);

/// Writes r as DIR/shard-I-of-N.json (creating DIR), whole or not at all (a temporary file
/// renamed into place); returns the path. Error(kBadInput) naming DIR when it cannot.
std::string write_shard_file(const std::string& dir, const ShardResult& r);

/// Checks, before a shard runs, that write_shard_file(dir, shard s) will succeed: DIR is made
/// (or is a folder) and a file can be created in it, and its result path is not a folder.
/// Error(kBadInput) naming DIR otherwise.
void check_writable(const std::string& dir, const Shard& s);

/// The machine fields of a result (hostname, cpu, isa, isas, cores), read off this machine.
void fill_machine(ShardResult& r);

}  // namespace akv::campaign
