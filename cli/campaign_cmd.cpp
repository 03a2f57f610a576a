// akv campaign [--cases N] [--seed S] [--backend NAME] [--profile ci|long|real] [--property ID]...
//              [--shard I/N | --shards N] [--out DIR]
// akv campaign merge DIR... [--json]
// Runs the property suite (verify/props, spec/properties.md) for a chosen number of cases, or
// one shard of it (spec/campaign.md), printing progress and a summary and writing the shard's
// result file; `merge` sums the shards of one campaign. A failure prints RapidCheck's
// counterexample, the RC_PARAMS reproduce string, and writes the shrunk case as a conversation
// file that `akv witness` re-runs. Exit 0 every property passed (every shard there once), 1 one
// failed (or a shard is missing, duplicated, or no case ran), 2 bad input.
#include <fmt/format.h>

#include <cstdlib>
#include <iostream>
#include <memory>
#include <optional>

#include "campaign/merge.hpp"
#include "campaign/run.hpp"
#include "cli/commands.hpp"
#include "cli/options.hpp"
#include "reference/error.hpp"
#include "reference/strict.hpp"
#include "runtime/backends.hpp"

namespace akv::cli {

namespace {
struct CampaignArgs {
  campaign::Plan plan;
  bool seed_set = false;
  std::string shard;
  int shards = 0;  // 0: not given
  std::vector<std::string> merge_inputs;
  bool merge_json = false;
};

// RapidCheck exits 1 by itself on an RC_PARAMS it cannot parse, which would read as a failed
// property: parse it first, so that a bad value is exit 2 naming it (spec/input.md IN4).
void check_rc_params() {
  const char* env = std::getenv("RC_PARAMS");
  if (!env) return;
  try {
    rc::detail::configFromString(env);
  } catch (const rc::detail::ConfigurationException& e) {
    throw Error(ErrorCode::kBadInput, std::string("RC_PARAMS: ") + e.what());
  }
}

int run_campaign_cmd(const CampaignArgs& a) {
  check_rc_params();
  campaign::Plan plan = a.plan;
  plan.shard = campaign::select_shard(a.shard, a.shards ? std::optional<int>(a.shards) : std::nullopt, campaign::process_env());
  if (plan.shard.total > 1 && !a.seed_set)
    throw Error(ErrorCode::kBadInput, fmt::format("shard {}/{} (from {}): give --seed S, the same for every shard, so that the "
                                                  "shards are parts of one campaign",
                                                  plan.shard.index, plan.shard.total, plan.shard.source));
  if (!a.seed_set) plan.seed = rc::detail::configuration().testParams.seed;  // RC_PARAMS seed, else random
  campaign::shard_cases(plan.cases, plan.shard);  // too few cases: bad input before anything runs
  std::string path;
  const campaign::ShardResult r = campaign::run_shard(plan, prop::Context{}, std::cout, &path);
  std::cout << "\nsummary:\n";
  int failed = 0;
  for (const campaign::PropertyResult& p : r.properties) {
    failed += p.status != "passed";
    std::cout << fmt::format("  {}  {:<58} {:>7} cases {:>8.1f} s\n", p.status == "passed" ? "PASS" : "FAIL", p.id, p.passed,
                             p.wall_seconds);
  }
  std::cout << fmt::format("{} of {} properties passed\n", r.properties.size() - failed, r.properties.size());
  std::cout << "result: " << path << (plan.shard.total > 1 ? " (akv campaign merge its folder with the other shards')" : "") << "\n";
  return r.passed() ? 0 : 1;
}

int run_merge_cmd(const CampaignArgs& a) {
  const campaign::MergeReport m = campaign::merge_shards(a.merge_inputs);
  if (a.merge_json) {
    print_json(campaign::to_json(m));
    return m.passed() ? 0 : 1;
  }
  const campaign::CampaignId& c = m.campaign;
  if (m.files.empty()) {
    for (const std::string& p : m.problems) std::cout << "problem: " << printable(p, 2000) << "\n";
    std::cout << "FAIL: no shard file: nothing was checked\n";
    return 1;
  }
    std::cout << fmt::format("akv campaign merge: {} of {} shards, {} properties x {} cases, backend {}, profile {}, seed {}, akv {} "
                             "(commit {})\n",
                             m.files.size(), c.shards, c.properties.size(), c.cases, printable(c.backend), printable(c.profile), c.seed,
                             printable(c.akv_version), printable(c.akv_commit));
  // Text from the files is printed escaped: a forged hostname cannot write a line of its own.
  for (const campaign::MergedMachine& x : m.machines)
    std::cout << fmt::format("  machine {}: {} ({} cores, isa {}): {} shard{}\n", printable(x.hostname), printable(x.cpu), x.cores,
                             printable(x.isa), x.shards, x.shards == 1 ? "" : "s");
  if (!m.properties.empty()) {
    std::cout << fmt::format("\n  {:<4}  {:<58} {:>9} {:>9} {:>6} {:>10} {:>12}\n", "", "property", "cases", "passed", "failed",
                             "cpu s", "cases/cpu-s");
    for (const campaign::MergedProperty& p : m.properties) {
      const bool ok = p.failed == 0 && p.gave_up == 0 && p.passed == c.cases;
      std::cout << fmt::format("  {:<4}  {:<58} {:>9} {:>9} {:>6} {:>10.1f} {:>12.1f}\n", ok ? "PASS" : "FAIL", printable(p.id), p.cases_run,
                               p.passed, p.failed, p.cpu_seconds, p.cpu_seconds > 0 ? static_cast<double>(p.passed) / p.cpu_seconds : 0.0);
    }
    int64_t cases = 0;
    for (const campaign::MergedProperty& p : m.properties) cases += p.passed;
    // What a team sizes its array by: cases per CPU-second (one core busy for one second).
    std::cout << fmt::format("  {:<4}  {:<58} {:>9} {:>9} {:>6} {:>10.1f} {:>12.1f}\n", "", "all properties", "", cases, "",
                             m.cpu_seconds, m.cpu_seconds > 0 ? static_cast<double>(cases) / m.cpu_seconds : 0.0);
    std::cout << fmt::format("  wall time summed over the shards: {:.1f} s\n", m.wall_seconds);
  }
  for (const campaign::MergedFailure& f : m.failures) {
    std::cout << fmt::format("\n{} {} in shard {} ({})\n", f.status == "gave_up" ? "GAVE UP" : "FAIL", printable(f.property), f.shard,
                             printable(f.file, 1000));
    if (!f.reproduce.empty()) std::cout << "  reproduce: " << printable(f.reproduce, 4000) << "\n";
    if (!f.counterexample.empty()) std::cout << "  counterexample: " << printable(f.counterexample, 1000) << "\n";
    if (!f.rerun.empty()) std::cout << "  re-run: " << printable(f.rerun, 2000) << "\n";
  }
  for (const std::string& p : m.problems) std::cout << "\nproblem: " << printable(p, 2000) << "\n";
  size_t ok = 0;
  for (const campaign::MergedProperty& p : m.properties) ok += p.failed == 0 && p.gave_up == 0 && p.passed == c.cases;
  std::cout << fmt::format("\n{}: {} of {} properties passed all {} cases over {} of {} shards\n", m.passed() ? "PASS" : "FAIL", ok,
                           m.properties.size(), c.cases, m.files.size(), c.shards);
  return m.passed() ? 0 : 1;
}
}  // namespace

Command add_campaign(CLI::App& app) {
  auto a = std::make_shared<CampaignArgs>();
  auto* c = app.add_subcommand("campaign", "Run the property suite (or one shard of it) for many cases; shrink and save any counterexample");
  c->add_option("--cases", a->plan.cases, "Successful cases per property, over all shards")->capture_default_str()->check(decimal(1, 1000000000));
  c->add_option("--seed", a->plan.seed, "RapidCheck seed (default: RC_PARAMS seed, else random; required when sharded)")
      ->check(decimal(0, UINT64_MAX))
      ->each([a](const std::string&) { a->seed_set = true; });
  c->add_option("--backend", a->plan.backend, "Backend to test: " + names_help(known_backend_names()) + " (in this build and on this machine: " + names_help(backend_names()) + ")")->capture_default_str()->check(nonempty());
  c->add_option("--profile", a->plan.profile, "Generator profile: ci | long (reaches the model's context) | real (SmolLM2-135M-Instruct)")
      ->capture_default_str()
      ->check(nonempty());
  c->add_option("--property", a->plan.properties, "Property id, suite or substring (repeatable; default: all)")->check(nonempty());
  c->add_option("--shard", a->shard,
                "Run shard I of N (0 <= I < N). Default: GTEST_SHARD_INDEX/GTEST_TOTAL_SHARDS, TEST_SHARD_INDEX/TEST_TOTAL_SHARDS, "
                "SLURM_ARRAY_TASK_ID with _COUNT (or _MIN/_MAX), JOB_COMPLETION_INDEX with --shards, else unsharded")
      ->check(nonempty());
  c->add_option("--shards", a->shards, "The number of shards when the environment gives only the index (JOB_COMPLETION_INDEX)")
      ->check(decimal(1, campaign::kMaxShards));
  c->add_option("--out", a->plan.out, "Directory for the result file (shard-I-of-N.json) and counterexample files")
      ->capture_default_str()
      ->check(nonempty());
  auto* m = c->add_subcommand("merge", "Sum the shard result files of one campaign; exit 1 on a failure, a missing or duplicated shard, or zero cases");
  m->add_option("DIR", a->merge_inputs, "Folders holding shard-I-of-N.json files (or the files)")->required()->check(nonempty());
  m->add_flag("--json", a->merge_json, "One JSON object on stdout");
  c->require_subcommand(0, 1);
  return {c, [a, c, m] {
            if (!m->parsed()) return run_campaign_cmd(*a);
            for (const CLI::Option* o : c->get_options())
              if (o->count() > 0 && o->get_name() != "--help")
                throw Error(ErrorCode::kBadInput, "akv campaign merge takes no campaign option (" + o->get_name() + ")");
            return run_merge_cmd(*a);
          }};
}

}  // namespace akv::cli
