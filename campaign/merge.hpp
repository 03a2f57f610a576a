// `akv campaign merge DIR...` (spec/campaign.md CP4): the shard files of one campaign summed
// per property, every failure listed with its reproduce line, and a verdict that passes only
// when every shard is there once and every case of every property passed.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "campaign/result.hpp"

namespace akv::campaign {

/// One property over every shard read.
struct MergedProperty {
  std::string id;
  int64_t cases_run = 0, passed = 0, failed = 0, gave_up = 0;  // gave_up: shards whose run gave up
  double wall_seconds = 0, cpu_seconds = 0;                // summed over the shards
};

/// A property that did not pass in one shard.
struct MergedFailure {
  std::string property;
  std::string status;          // failed | gave_up
  int shard = 0;
  std::string file;            // the shard file
  std::string reproduce;       // "" when none
  std::string counterexample;  // its path beside the shard file ("" when none)
  std::string rerun;           // `akv witness ...` ("" when it does not apply)
};

/// A machine the shards ran on.
struct MergedMachine {
  std::string hostname, cpu, isa;
  int cores = 0, shards = 0;
};

/// The merge of one campaign's shard files.
struct MergeReport {
  CampaignId campaign;
  std::vector<std::string> files;          // the shard files read, in shard order
  std::vector<MergedProperty> properties;  // in the campaign's order
  std::vector<MergedFailure> failures;
  std::vector<MergedMachine> machines;
  std::vector<std::string> problems;       // missing or duplicated shards, zero or missing cases
  double wall_seconds = 0, cpu_seconds = 0;  // summed over the shards

  /// No problem, no failure, and every property passed all the campaign's cases.
  bool passed() const;
};

/// Reads every shard-*-of-*.json in each folder of `inputs` (a file is read as itself) and
/// merges them. Missing shards, a shard read twice, zero cases, a shard whose properties
/// differ from the campaign's, and a property short of its cases are problems (the verdict
/// fails, exit 1). Throws Error(kBadInput) naming the file for an input that cannot be read, a
/// file that is not a shard file, shards of different campaigns (seed, cases, shards, backend,
/// profile, properties or akv build). No shard file at all is a problem too (nothing checked).
MergeReport merge_shards(const std::vector<std::string>& inputs);

/// The report as JSON: "campaign", "shards", "properties", "failures", "machines", "problems",
/// "passed".
nlohmann::json to_json(const MergeReport& m);

}  // namespace akv::campaign
