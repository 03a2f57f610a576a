// Which shard of a campaign this process runs, and what that shard runs (spec/campaign.md
// CP1, CP2): from `--shard I/N`, else from the index a CI matrix, Slurm or Kubernetes gives.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace akv::campaign {

/// Shard `index` of `total` (0 <= index < total). `source` says where it came from: "--shard",
/// "GTEST_SHARD_INDEX/GTEST_TOTAL_SHARDS", ..., or "" for an unsharded run (0 of 1).
struct Shard {
  int index = 0;
  int total = 1;
  std::string source;
};

/// The most shards a campaign may have.
inline constexpr int kMaxShards = 100000;

/// Reads an environment variable: nullopt when unset (an empty value is a value, and bad).
using Env = std::function<std::optional<std::string>(const std::string& name)>;

/// The process environment.
Env process_env();

/// The shard of this process (CP1). `flag` is `--shard`'s value ("I/N", or "" when not given),
/// `shards` is `--shards N` (the total when the environment gives only an index). Without
/// `--shard` the environment is read, each pair that is set taken in this order:
/// GTEST_SHARD_INDEX/GTEST_TOTAL_SHARDS (ctest, GoogleTest), TEST_SHARD_INDEX/TEST_TOTAL_SHARDS
/// (Bazel), SLURM_ARRAY_TASK_ID with SLURM_ARRAY_TASK_COUNT or _MIN/_MAX/_STEP (a Slurm job
/// array of a contiguous range), JOB_COMPLETION_INDEX with `shards` (a Kubernetes Indexed Job).
/// The first that is set is the source; every other that is set must give the same shard.
/// Nothing set and no flag: 0 of 1, source "".
/// Throws Error(kBadInput) naming the flag or variables for a value that is not a decimal
/// integer in range, half of a pair, an index without a total, `--shards` that disagrees,
/// two sources that disagree, or a Slurm array that is not a contiguous range.
Shard select_shard(const std::string& flag, std::optional<int> shards, const Env& env);

/// The RapidCheck seed shard `s` runs (CP2): `seed` itself for an unsharded run, else a
/// SplitMix64 mix of `seed` and the shard index alone, so a shard re-runs alone.
uint64_t shard_seed(uint64_t seed, const Shard& s);

/// The cases per property shard `s` runs out of `cases` (CP2): cases / total, one more for the
/// first cases % total shards, so the shards add up to `cases`. Throws Error(kBadInput) when
/// cases < s.total (a shard would check nothing).
int shard_cases(int cases, const Shard& s);

/// The fewest cases a shard of a sharded campaign runs per property (CP2): RapidCheck's
/// max_size + 1, so that each shard's cases take every size 0..max_size, as an unsharded run
/// of as many cases does (a shard of one case would only ever draw size 0).
inline int min_shard_cases(int max_size) { return max_size + 1; }

/// "shard-I-of-N.json": the result file of shard `s` (CP3).
std::string shard_file_name(const Shard& s);

}  // namespace akv::campaign
