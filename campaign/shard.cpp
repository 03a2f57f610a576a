#include "campaign/shard.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <vector>

#include "reference/error.hpp"

namespace akv::campaign {

namespace {

[[noreturn]] void bad(const std::string& msg) { throw Error(ErrorCode::kBadInput, msg); }

// `name`='value' for messages, the value cut to 40 bytes.
std::string named(const std::string& name, const std::string& value) {
  std::string v;
  for (char c : value.substr(0, 40)) v += (c >= 0x20 && c < 0x7f) ? std::string(1, c) : fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
  return fmt::format("{}='{}'{}", name, v, value.size() > 40 ? "..." : "");
}

// A decimal integer in [lo, hi]: digits only (no sign, space, hex or exponent), any length.
int64_t decimal(const std::string& name, const std::string& value, int64_t lo, int64_t hi) {
  if (value.empty() || value.find_first_not_of("0123456789") != std::string::npos)
    bad(fmt::format("{}: not a decimal integer", named(name, value)));
  int64_t v = 0;
  for (char c : value) {
    if (v > (hi - (c - '0')) / 10) bad(fmt::format("{}: out of range [{}, {}]", named(name, value), lo, hi));
    v = v * 10 + (c - '0');
  }
  if (v < lo) bad(fmt::format("{}: out of range [{}, {}]", named(name, value), lo, hi));
  return v;
}

// The shard one source gives, or nullopt when none of its variables is set.
std::optional<Shard> from_pair(const Env& env, const std::string& index_var, const std::string& total_var) {
  const auto i = env(index_var), n = env(total_var);
  if (!i && !n) return std::nullopt;
  if (!i) bad(fmt::format("{} is set but {} is not", named(total_var, *n), index_var));
  if (!n) bad(fmt::format("{} is set but {} is not", named(index_var, *i), total_var));
  const int total = static_cast<int>(decimal(total_var, *n, 1, kMaxShards));
  const int index = static_cast<int>(decimal(index_var, *i, 0, kMaxShards - 1));
  if (index >= total) bad(fmt::format("{} is not below {}", named(index_var, *i), named(total_var, *n)));
  return Shard{index, total, index_var + "/" + total_var};
}

// A Slurm job array: the task's place in a contiguous range MIN, MIN+STEP, ..., MAX.
std::optional<Shard> from_slurm(const Env& env) {
  const auto id = env("SLURM_ARRAY_TASK_ID");
  const auto min_s = env("SLURM_ARRAY_TASK_MIN"), max_s = env("SLURM_ARRAY_TASK_MAX");
  const auto count_s = env("SLURM_ARRAY_TASK_COUNT"), step_s = env("SLURM_ARRAY_TASK_STEP");
  if (!id) {  // Slurm sets them all in an array task; one alone is a half-set pair
    for (const char* v : {"SLURM_ARRAY_TASK_COUNT", "SLURM_ARRAY_TASK_MIN", "SLURM_ARRAY_TASK_MAX", "SLURM_ARRAY_TASK_STEP"})
      if (const auto x = env(v)) bad(fmt::format("{} is set but SLURM_ARRAY_TASK_ID is not", named(v, *x)));
    return std::nullopt;
  }
  // A range is MIN and MAX together (STEP optional); COUNT alone counts from 0.
  if ((min_s || step_s) && !max_s) bad(fmt::format("{} is set but SLURM_ARRAY_TASK_MAX is not", named(min_s ? "SLURM_ARRAY_TASK_MIN" : "SLURM_ARRAY_TASK_STEP", min_s ? *min_s : *step_s)));
  if (max_s && !min_s) bad(fmt::format("{} is set but SLURM_ARRAY_TASK_MIN is not", named("SLURM_ARRAY_TASK_MAX", *max_s)));
  const int64_t big = int64_t{1} << 40;
  const int64_t task = decimal("SLURM_ARRAY_TASK_ID", *id, 0, big);
  const int64_t min = min_s ? decimal("SLURM_ARRAY_TASK_MIN", *min_s, 0, big) : 0;
  const int64_t step = step_s ? decimal("SLURM_ARRAY_TASK_STEP", *step_s, 1, big) : 1;
  if (task < min || (task - min) % step != 0)
    bad(fmt::format("{} is not in the range {}..{} step {}: give --shard I/N", named("SLURM_ARRAY_TASK_ID", *id), min,
                    max_s ? *max_s : "?", step));
  int64_t total = 0;
  if (count_s) total = decimal("SLURM_ARRAY_TASK_COUNT", *count_s, 1, kMaxShards);
  if (max_s) {
    const int64_t max = decimal("SLURM_ARRAY_TASK_MAX", *max_s, min, big);
    const int64_t in_range = (max - min) / step + 1;
    // A list such as --array=1,5,7 has MIN 1, MAX 7 and 3 tasks: no index follows from the id.
    if (count_s && in_range != total)
      bad(fmt::format("{} with {}, {} and step {} is not a contiguous range (a list of ids?): give --shard I/N",
                      named("SLURM_ARRAY_TASK_COUNT", *count_s), named("SLURM_ARRAY_TASK_MIN", min_s.value_or("0")),
                      named("SLURM_ARRAY_TASK_MAX", *max_s), step));
    if (in_range > kMaxShards) bad(fmt::format("{}: more than {} shards", named("SLURM_ARRAY_TASK_MAX", *max_s), kMaxShards));
    total = in_range;
  }
  if (total == 0) bad(fmt::format("{} is set but neither SLURM_ARRAY_TASK_COUNT nor SLURM_ARRAY_TASK_MAX is", named("SLURM_ARRAY_TASK_ID", *id)));
  const int64_t index = (task - min) / step;
  if (index >= total) bad(fmt::format("{} is past the array's {} tasks", named("SLURM_ARRAY_TASK_ID", *id), total));
  return Shard{static_cast<int>(index), static_cast<int>(total), "SLURM_ARRAY_TASK_ID"};
}

// A Kubernetes Indexed Job gives only the index; the total is --shards.
std::optional<Shard> from_k8s(const Env& env, std::optional<int> shards) {
  const auto i = env("JOB_COMPLETION_INDEX");
  if (!i) return std::nullopt;
  if (!shards) bad(fmt::format("{} is set: give the number of shards with --shards N", named("JOB_COMPLETION_INDEX", *i)));
  const int index = static_cast<int>(decimal("JOB_COMPLETION_INDEX", *i, 0, kMaxShards - 1));
  if (index >= *shards) bad(fmt::format("{} is not below --shards {}", named("JOB_COMPLETION_INDEX", *i), *shards));
  return Shard{index, *shards, "JOB_COMPLETION_INDEX"};
}

std::string describe(const Shard& s) { return fmt::format("{}/{} (from {})", s.index, s.total, s.source); }

}  // namespace

Env process_env() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (!v) return std::nullopt;
    return std::string(v);
  };
}

Shard select_shard(const std::string& flag, std::optional<int> shards, const Env& env) {
  if (shards && (*shards < 1 || *shards > kMaxShards)) bad(fmt::format("--shards {}: out of range [1, {}]", *shards, kMaxShards));
  if (!flag.empty()) {
    const size_t slash = flag.find('/');
    if (slash == std::string::npos) bad(fmt::format("{}: not I/N (shard I of N, 0 <= I < N)", named("--shard", flag)));
    const int total = static_cast<int>(decimal("--shard total", flag.substr(slash + 1), 1, kMaxShards));
    const int index = static_cast<int>(decimal("--shard index", flag.substr(0, slash), 0, kMaxShards - 1));
    if (index >= total) bad(fmt::format("{}: the index must be below the total", named("--shard", flag)));
    if (shards && *shards != total) bad(fmt::format("{} and --shards {} disagree", named("--shard", flag), *shards));
    return Shard{index, total, "--shard"};
  }
  std::vector<Shard> found;
  for (auto s : {from_pair(env, "GTEST_SHARD_INDEX", "GTEST_TOTAL_SHARDS"), from_pair(env, "TEST_SHARD_INDEX", "TEST_TOTAL_SHARDS"),
                 from_slurm(env), from_k8s(env, shards)})
    if (s) found.push_back(*s);
  if (found.empty()) {
    if (shards) bad(fmt::format("--shards {} gives only the total: give --shard I/N, or run where the index is set "
                                "(GTEST_SHARD_INDEX, TEST_SHARD_INDEX, SLURM_ARRAY_TASK_ID, JOB_COMPLETION_INDEX)", *shards));
    return Shard{};
  }
  for (const Shard& s : found)
    if (s.index != found[0].index || s.total != found[0].total)
      bad(fmt::format("the environment names two shards: {} and {}; unset one or give --shard I/N", describe(found[0]), describe(s)));
  if (shards && *shards != found[0].total) bad(fmt::format("--shards {} disagrees with shard {}", *shards, describe(found[0])));
  return found[0];
}

uint64_t shard_seed(uint64_t seed, const Shard& s) {
  if (s.total == 1) return seed;
  // SplitMix64 (Steele, Lea, Flood 2014) of the seed offset by the index: distinct, well-mixed
  // seeds for neighbouring shards, fixed by (seed, index) alone.
  uint64_t z = seed + 0x9E3779B97F4A7C15ull * (static_cast<uint64_t>(s.index) + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

int shard_cases(int cases, const Shard& s) {
  if (cases < s.total)
    bad(fmt::format("--cases {} is fewer than the {} shards: a shard would check nothing", cases, s.total));
  return cases / s.total + (s.index < cases % s.total ? 1 : 0);
}

std::string shard_file_name(const Shard& s) { return fmt::format("shard-{}-of-{}.json", s.index, s.total); }

}  // namespace akv::campaign
