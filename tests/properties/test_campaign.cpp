// Property campaigns across machines (spec/campaign.md CP1-CP5): which shard a process runs,
// what it runs and writes, and the merge, as a CI matrix, Slurm or Kubernetes would drive them.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "../cli_support.hpp"
#include "campaign/merge.hpp"
#include "campaign/result.hpp"
#include "campaign/run.hpp"
#include "campaign/shard.hpp"
#include "reference/error.hpp"
#include "tests/properties/mutants.hpp"

namespace akv::test {
namespace {

namespace fs = std::filesystem;
using campaign::Shard;
using nlohmann::json;

campaign::Env env_of(std::map<std::string, std::string> vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    const auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

Shard pick(const std::map<std::string, std::string>& vars, const std::string& flag = "", std::optional<int> shards = std::nullopt) {
  return campaign::select_shard(flag, shards, env_of(vars));
}

// The message of the Error(kBadInput) that selecting throws, or "" when it does not throw.
std::string refusal(const std::map<std::string, std::string>& vars, const std::string& flag = "", std::optional<int> shards = std::nullopt) {
  try {
    pick(vars, flag, shards);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kBadInput);
    return e.what();
  }
  return "";
}

std::string fresh_dir(const std::string& name) {
  const fs::path d = fs::path(::testing::TempDir()) / ("akv_campaign_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d.string();
}

// Shell text that clears every variable a shard could be read from, then sets `set`.
std::string shard_env(const std::string& set = "") {
  return "unset GTEST_SHARD_INDEX GTEST_TOTAL_SHARDS TEST_SHARD_INDEX TEST_TOTAL_SHARDS SLURM_ARRAY_TASK_ID "
         "SLURM_ARRAY_TASK_COUNT SLURM_ARRAY_TASK_MIN SLURM_ARRAY_TASK_MAX SLURM_ARRAY_TASK_STEP JOB_COMPLETION_INDEX RC_PARAMS; " +
         set;
}

// Two cheap properties: the campaign tests measure the protocol, not the properties. A sharded
// campaign runs at least 101 cases a shard (RapidCheck's sizes 0..100, CP2).
const std::vector<std::string> kProps = {"E1_PropRegression.TwoEvictionsBeforeAppendCompose", "E1_PropRegression.TwoInteriorRemovals"};

std::vector<std::string> campaign_args(int cases, const std::string& out) {
  std::vector<std::string> a = {"campaign", "--cases", std::to_string(cases), "--seed", "77", "--out", out};
  for (const std::string& p : kProps) a.insert(a.end(), {"--property", p});
  return a;
}

TEST(CP1_Shard, FromTheFlag) {
  const Shard s = pick({{"SLURM_ARRAY_TASK_ID", "3"}, {"SLURM_ARRAY_TASK_COUNT", "9"}}, "2/4");
  EXPECT_EQ(s.index, 2);
  EXPECT_EQ(s.total, 4);
  EXPECT_EQ(s.source, "--shard");  // the flag wins over the environment
  EXPECT_EQ(pick({}, "0/1").total, 1);
  EXPECT_EQ(pick({}, "2/4", 4).index, 2);
  for (const std::string bad : {"4/4", "5/4", "1/0", "-1/4", "+1/4", "1/+4", " 1/4", "1/4 ", "a/4", "1/b", "1", "/4", "1/", "1/4/2",
                                "0x1/4", "1e0/4", "1/100001", "1/9223372036854775808", "99999999999999999999999/4"})
    EXPECT_NE(refusal({}, bad), "") << bad;
  EXPECT_EQ(pick({}, "0000000000001/000000000000004").index, 1);  // leading zeros are still decimal
  EXPECT_NE(refusal({}, "1/9223372036854775808").find("out of range"), std::string::npos);
  EXPECT_NE(refusal({}, "2/4", 8).find("--shards 8"), std::string::npos);
}

TEST(CP1_Shard, FromTheEnvironmentInOrder) {
  EXPECT_EQ(pick({}).total, 1);
  EXPECT_EQ(pick({}).source, "");
  Shard s = pick({{"GTEST_SHARD_INDEX", "1"}, {"GTEST_TOTAL_SHARDS", "3"}});
  EXPECT_EQ(s.index, 1);
  EXPECT_EQ(s.total, 3);
  EXPECT_EQ(s.source, "GTEST_SHARD_INDEX/GTEST_TOTAL_SHARDS");
  s = pick({{"TEST_SHARD_INDEX", "0"}, {"TEST_TOTAL_SHARDS", "2"}});
  EXPECT_EQ(s.source, "TEST_SHARD_INDEX/TEST_TOTAL_SHARDS");
  // Bazel sets both pairs alike: the first is the source.
  s = pick({{"GTEST_SHARD_INDEX", "1"}, {"GTEST_TOTAL_SHARDS", "2"}, {"TEST_SHARD_INDEX", "1"}, {"TEST_TOTAL_SHARDS", "2"}});
  EXPECT_EQ(s.source, "GTEST_SHARD_INDEX/GTEST_TOTAL_SHARDS");
  // Slurm: a 0-based array, a 1-based one, one with a step, MIN/MAX without COUNT.
  s = pick({{"SLURM_ARRAY_TASK_ID", "3"}, {"SLURM_ARRAY_TASK_COUNT", "4"}, {"SLURM_ARRAY_TASK_MIN", "0"}, {"SLURM_ARRAY_TASK_MAX", "3"}});
  EXPECT_EQ(s.index, 3);
  EXPECT_EQ(s.total, 4);
  EXPECT_EQ(s.source, "SLURM_ARRAY_TASK_ID");
  s = pick({{"SLURM_ARRAY_TASK_ID", "1"}, {"SLURM_ARRAY_TASK_COUNT", "4"}, {"SLURM_ARRAY_TASK_MIN", "1"}, {"SLURM_ARRAY_TASK_MAX", "4"}});
  EXPECT_EQ(s.index, 0);
  s = pick({{"SLURM_ARRAY_TASK_ID", "14"}, {"SLURM_ARRAY_TASK_MIN", "10"}, {"SLURM_ARRAY_TASK_MAX", "16"}, {"SLURM_ARRAY_TASK_STEP", "2"}});
  EXPECT_EQ(s.index, 2);
  EXPECT_EQ(s.total, 4);
  s = pick({{"SLURM_ARRAY_TASK_ID", "2"}, {"SLURM_ARRAY_TASK_COUNT", "5"}});
  EXPECT_EQ(s.index, 2);
  EXPECT_EQ(s.total, 5);
  // Kubernetes gives the index; --shards the total.
  s = pick({{"JOB_COMPLETION_INDEX", "6"}}, "", 8);
  EXPECT_EQ(s.index, 6);
  EXPECT_EQ(s.total, 8);
  EXPECT_EQ(s.source, "JOB_COMPLETION_INDEX");
  // --shards that agrees with the environment's total.
  EXPECT_EQ(pick({{"GTEST_SHARD_INDEX", "1"}, {"GTEST_TOTAL_SHARDS", "3"}}, "", 3).index, 1);
}

TEST(CP1_Shard, BadOrContradictoryValuesAreRefusedNamingThem) {
  const std::vector<std::pair<std::map<std::string, std::string>, std::string>> cases = {
      {{{"GTEST_SHARD_INDEX", "1"}}, "GTEST_TOTAL_SHARDS"},
      {{{"GTEST_TOTAL_SHARDS", "4"}}, "GTEST_SHARD_INDEX"},
      {{{"GTEST_SHARD_INDEX", "4"}, {"GTEST_TOTAL_SHARDS", "4"}}, "GTEST_SHARD_INDEX='4'"},
      {{{"GTEST_SHARD_INDEX", ""}, {"GTEST_TOTAL_SHARDS", "4"}}, "GTEST_SHARD_INDEX=''"},
      {{{"GTEST_SHARD_INDEX", "-1"}, {"GTEST_TOTAL_SHARDS", "4"}}, "GTEST_SHARD_INDEX='-1'"},
      {{{"GTEST_SHARD_INDEX", "1"}, {"GTEST_TOTAL_SHARDS", "0"}}, "GTEST_TOTAL_SHARDS='0'"},
      {{{"GTEST_SHARD_INDEX", " 1"}, {"GTEST_TOTAL_SHARDS", "4"}}, "GTEST_SHARD_INDEX=' 1'"},
      {{{"TEST_SHARD_INDEX", "1"}, {"TEST_TOTAL_SHARDS", "x"}}, "TEST_TOTAL_SHARDS='x'"},
      // Two sources that name different shards.
      {{{"GTEST_SHARD_INDEX", "1"}, {"GTEST_TOTAL_SHARDS", "4"}, {"SLURM_ARRAY_TASK_ID", "2"}, {"SLURM_ARRAY_TASK_COUNT", "4"}},
       "SLURM_ARRAY_TASK_ID"},
      {{{"GTEST_SHARD_INDEX", "1"}, {"GTEST_TOTAL_SHARDS", "4"}, {"TEST_SHARD_INDEX", "1"}, {"TEST_TOTAL_SHARDS", "5"}},
       "TEST_SHARD_INDEX"},
      // Slurm: no total, an id past the array, outside its step, a list of ids.
      {{{"SLURM_ARRAY_TASK_ID", "2"}}, "SLURM_ARRAY_TASK_COUNT"},
      {{{"SLURM_ARRAY_TASK_ID", "4"}, {"SLURM_ARRAY_TASK_COUNT", "4"}}, "SLURM_ARRAY_TASK_ID='4'"},
      {{{"SLURM_ARRAY_TASK_ID", "0"}, {"SLURM_ARRAY_TASK_MIN", "1"}, {"SLURM_ARRAY_TASK_MAX", "4"}}, "SLURM_ARRAY_TASK_ID='0'"},
      {{{"SLURM_ARRAY_TASK_ID", "3"}, {"SLURM_ARRAY_TASK_MIN", "0"}, {"SLURM_ARRAY_TASK_MAX", "6"}, {"SLURM_ARRAY_TASK_STEP", "2"}},
       "SLURM_ARRAY_TASK_ID='3'"},
      {{{"SLURM_ARRAY_TASK_ID", "5"}, {"SLURM_ARRAY_TASK_COUNT", "3"}, {"SLURM_ARRAY_TASK_MIN", "1"}, {"SLURM_ARRAY_TASK_MAX", "7"}},
       "not a contiguous range"},
      // Slurm's other variables without an id, a range with half its ends.
      {{{"SLURM_ARRAY_TASK_COUNT", "4"}}, "SLURM_ARRAY_TASK_ID is not"},
      {{{"SLURM_ARRAY_TASK_ID", "2"}, {"SLURM_ARRAY_TASK_COUNT", "3"}, {"SLURM_ARRAY_TASK_MIN", "1"}}, "SLURM_ARRAY_TASK_MAX is not"},
      {{{"SLURM_ARRAY_TASK_ID", "2"}, {"SLURM_ARRAY_TASK_MAX", "3"}}, "SLURM_ARRAY_TASK_MIN is not"},
      // Kubernetes without a total.
      {{{"JOB_COMPLETION_INDEX", "1"}}, "--shards"},
  };
  for (const auto& [vars, named] : cases) {
    const std::string why = refusal(vars);
    EXPECT_NE(why.find(named), std::string::npos) << "'" << why << "' should name " << named;
  }
  EXPECT_NE(refusal({{"JOB_COMPLETION_INDEX", "8"}}, "", 8).find("JOB_COMPLETION_INDEX='8'"), std::string::npos);
  EXPECT_NE(refusal({{"GTEST_SHARD_INDEX", "1"}, {"GTEST_TOTAL_SHARDS", "4"}}, "", 3).find("--shards 3"), std::string::npos);
  EXPECT_NE(refusal({}, "", 4).find("--shards 4"), std::string::npos);  // a total and no index
}

TEST(CP2_ShardRuns, CasesAddUpAndEveryShardChecksSome) {
  for (int n : {1, 2, 3, 4, 7, 16})
    for (int cases : {n, n + 1, 2 * n - 1, 100, 1001}) {
      int sum = 0;
      for (int i = 0; i < n; ++i) {
        const int c = campaign::shard_cases(cases, Shard{i, n, "t"});
        EXPECT_GE(c, 1);
        EXPECT_LE(c, cases / n + 1);
        sum += c;
      }
      EXPECT_EQ(sum, cases) << cases << " cases over " << n << " shards";
    }
  EXPECT_THROW(campaign::shard_cases(3, Shard{0, 4, "t"}), Error);
}

TEST(CP2_ShardRuns, SeedsAreFixedByTheSeedAndTheIndex) {
  EXPECT_EQ(campaign::shard_seed(77, Shard{0, 1, ""}), 77u);  // unsharded: the seed itself
  std::set<uint64_t> seen;
  for (int i = 0; i < 64; ++i) seen.insert(campaign::shard_seed(77, Shard{i, 64, "t"}));
  EXPECT_EQ(seen.size(), 64u);
  EXPECT_EQ(campaign::shard_seed(77, Shard{2, 4, "t"}), campaign::shard_seed(77, Shard{2, 4, "other source"}));
  EXPECT_NE(campaign::shard_seed(77, Shard{2, 4, "t"}), campaign::shard_seed(78, Shard{2, 4, "t"}));
}

// A silent run of one shard in this process, against `ctx`'s backends.
campaign::ShardResult run_here(const Shard& s, const std::string& out, int cases, const prop::Context& ctx = {},
                               const std::vector<std::string>& props = kProps) {
  campaign::Plan plan;
  plan.seed = 77;
  plan.cases = cases;
  plan.properties = props;
  plan.shard = s;
  plan.out = out;
  std::ostringstream log;
  return campaign::run_shard(plan, ctx, log);
}

// A backend whose every call after its first flips a bit of layer-0 K: I1 catches it.
prop::Context warm_mutant() {
  prop::Context ctx;
  ctx.factory = [](std::shared_ptr<const Model> model, const BackendOptions&) {
    return std::make_unique<MutantBackend>(std::move(model), Mutation::kWarmState);
  };
  return ctx;
}

const std::vector<std::string> kCatches = {"I1_PropRegression.DecodeStepEqualsBatch"};

TEST(CP2_ShardRuns, AShardReRunAloneFindsTheSameCase) {
  // A backend that breaks I1: shard 1 of 3 fails, shrinks and records its reproduce string;
  // run alone again it fails the same way.
  const std::vector<std::string> props = kCatches;
  const auto a = run_here(Shard{1, 3, "t"}, fresh_dir("rerun_a"), 303, warm_mutant(), props);
  const auto b = run_here(Shard{1, 3, "t"}, fresh_dir("rerun_b"), 303, warm_mutant(), props);
  ASSERT_EQ(a.properties.size(), 1u);
  EXPECT_EQ(a.properties[0].status, "failed");
  EXPECT_FALSE(a.properties[0].reproduce.empty());
  EXPECT_EQ(a.properties[0].reproduce, b.properties[0].reproduce);
  EXPECT_EQ(a.properties[0].passed, b.properties[0].passed);
  EXPECT_EQ(a.seed, b.seed);
  // Another shard draws other cases.
  const auto c = run_here(Shard{2, 3, "t"}, fresh_dir("rerun_c"), 303, warm_mutant(), props);
  EXPECT_NE(c.seed, a.seed);
}

TEST(CP3_ShardFile, HoldsWhatTheMergeAndAReaderNeed) {
  const std::string dir = fresh_dir("file");
  const auto r = run_here(Shard{1, 2, "--shard"}, dir, 203);
  const std::string path = dir + "/shard-1-of-2.json";
  ASSERT_TRUE(fs::exists(path));
  const json j = json::parse(slurp(path));
  EXPECT_EQ(j["akv_campaign_shard"], 1);
  EXPECT_EQ(j["campaign"]["seed"], 77);
  EXPECT_EQ(j["campaign"]["cases"], 203);
  EXPECT_EQ(j["campaign"]["rapidcheck"]["max_size"], 100);
  EXPECT_EQ(j["campaign"]["shards"], 2);
  EXPECT_EQ(j["campaign"]["properties"], json(kProps));
  EXPECT_EQ(j["shard"]["index"], 1);
  EXPECT_EQ(j["shard"]["cases"], 101);  // 203 = 102 + 101
  EXPECT_EQ(j["shard"]["seed"], campaign::shard_seed(77, Shard{1, 2, ""}));
  EXPECT_FALSE(j["akv"]["version"].get<std::string>().empty());
  EXPECT_FALSE(j["akv"]["commit"].get<std::string>().empty());
  EXPECT_FALSE(j["machine"]["isa"].get<std::string>().empty());
  EXPECT_GE(j["machine"]["cores"].get<int>(), 1);
  EXPECT_EQ(j["passed"], true);
  ASSERT_EQ(j["properties"].size(), kProps.size());
  for (const json& p : j["properties"]) {
    EXPECT_EQ(p["status"], "passed");
    EXPECT_EQ(p["cases_run"], 101);
    EXPECT_EQ(p["passed"], 101);
    EXPECT_EQ(p["failed"], 0);
    EXPECT_FALSE(p.contains("reproduce"));  // absent, never null or ""
  }
  const campaign::ShardResult back = campaign::read_shard_file(path);
  EXPECT_EQ(campaign::to_json(back), campaign::to_json(r));
}

TEST(CP3_ShardFile, ATamperedOrMalformedFileIsRefusedNamingTheField) {
  const std::string dir = fresh_dir("tamper");
  run_here(Shard{0, 2, "--shard"}, dir, 202);
  const json good = json::parse(slurp(dir + "/shard-0-of-2.json"));
  const std::vector<std::pair<std::function<void(json&)>, std::string>> edits = {
      {[](json& j) { j["shard"]["seed"] = 1; }, "shard.seed"},
      {[](json& j) { j["shard"]["cases"] = 3; }, "shard.cases"},
      {[](json& j) { j["passed"] = false; }, "passed"},
      {[](json& j) { j["properties"][0]["passed"] = 1; }, "properties[0]"},
      {[](json& j) { j["properties"][0]["failed"] = 2; }, "properties[0].failed"},
      {[](json& j) { j["properties"][0]["status"] = "fine"; }, "properties[0].status"},
      {[](json& j) { j["properties"][1]["counterexample"] = "../x.json"; }, "properties[1].counterexample"},
      {[](json& j) { j["campaign"].erase("backend"); }, "campaign.backend"},
      {[](json& j) { j["campaign"]["rapidcheck"]["max_size"] = "100"; }, "campaign.rapidcheck.max_size"},
      {[](json& j) { j["campaign"]["cases"] = -4; }, "campaign.cases"},
      {[](json& j) { j["wall_seconds"] = nullptr; }, "wall_seconds"},
      {[](json& j) { j["shard"]["index"] = 2; }, "shard.index"},
      {[](json& j) { j["akv_campaign_shard"] = 2; }, "akv_campaign_shard"},
      {[](json& j) { j["properties"][0]["id"] = "E1_PropRegression.TwoInteriorRemovals"; }, "properties[0].id"},
      {[](json& j) { j["properties"][0]["reproduce"] = ""; }, "properties[0].reproduce"},
      {[](json& j) { j["properties"][0]["counterexample"] = ".."; }, "properties[0].counterexample"},
      {[](json& j) { j["started"] = "1"; }, "started"},
      {[](json& j) { j["cpu_seconds"] = 1e308; }, "cpu_seconds"},
      {[](json& j) { j["machine"]["extra"] = 1; }, "machine.extra"},
      {[](json& j) { j["verdict"] = "PASS"; }, "verdict"},
      {[](json& j) { j["properties"].erase(1); }, "properties"},
  };
  for (const auto& [edit, field] : edits) {
    json j = good;
    edit(j);
    const std::string path = dir + "/edited.json";
    std::ofstream(path) << j.dump();
    try {
      campaign::read_shard_file(path);
      ADD_FAILURE() << "accepted an edit of " << field;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kBadInput);
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
    }
  }
  for (const std::string& text : std::vector<std::string>{"", "{", "[]", "{\"akv_campaign_shard\": 1, \"akv_campaign_shard\": 1}", std::string(100, '[')}) {
    const std::string path = dir + "/broken.json";
    std::ofstream(path) << text;
    EXPECT_THROW(campaign::read_shard_file(path), Error) << text;
  }
}

// The merge as a user runs it: exit code and stdout (with --json, the parsed report).
struct Merged {
  int code;
  json report;
  std::string text;
};
Merged merge(const std::vector<std::string>& dirs) {
  std::vector<std::string> a = {"campaign", "merge", "--json"};
  a.insert(a.end(), dirs.begin(), dirs.end());
  const CliRun j = run_akv(a, shard_env());
  std::vector<std::string> t = {"campaign", "merge"};
  t.insert(t.end(), dirs.begin(), dirs.end());
  const CliRun r = run_akv(t, shard_env());
  EXPECT_EQ(j.code, r.code) << r.out << r.err;
  return {j.code, j.code <= 1 ? json::parse(j.out, nullptr, false) : json(), r.out + r.err};
}

TEST(CP4_Merge, FourShardProcessesSumToTheUnshardedRun) {
  // One process per shard, each told its shard the way an engine tells it.
  const std::string shards = fresh_dir("four"), whole = fresh_dir("whole");
  const std::vector<std::pair<std::string, std::vector<std::string>>> how = {
      {"", {"--shard", "0/4"}},
      {"export GTEST_SHARD_INDEX=1 GTEST_TOTAL_SHARDS=4;", {}},
      {"export SLURM_ARRAY_TASK_ID=3 SLURM_ARRAY_TASK_COUNT=4 SLURM_ARRAY_TASK_MIN=1 SLURM_ARRAY_TASK_MAX=4;", {}},
      {"export JOB_COMPLETION_INDEX=3;", {"--shards", "4"}},
  };
  std::set<std::string> sources;
  for (const auto& [env, flags] : how) {
    auto args = campaign_args(404, shards);
    args.insert(args.end(), flags.begin(), flags.end());
    const CliRun r = run_akv(args, shard_env(env), 300);
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("2 of 2 properties passed"), std::string::npos) << r.out;
  }
  for (int i = 0; i < 4; ++i) sources.insert(json::parse(slurp(shards + "/shard-" + std::to_string(i) + "-of-4.json"))["shard"]["source"]);
  EXPECT_EQ(sources.size(), 4u);
  const CliRun one = run_akv(campaign_args(404, whole), shard_env(), 300);
  ASSERT_EQ(one.code, 0) << one.out << one.err;

  const Merged four = merge({shards}), single = merge({whole});
  ASSERT_EQ(four.code, 0) << four.text;
  ASSERT_EQ(single.code, 0) << single.text;
  EXPECT_EQ(four.report["passed"], true);
  EXPECT_EQ(four.report["shards"].size(), 4u);
  ASSERT_EQ(four.report["properties"].size(), kProps.size());
  for (size_t i = 0; i < kProps.size(); ++i) {
    const json &p = four.report["properties"][i], &q = single.report["properties"][i];
    EXPECT_EQ(p["id"], kProps[i]);
    EXPECT_EQ(p["passed"], 404);
    EXPECT_EQ(p["cases_run"], q["cases_run"]);
    EXPECT_EQ(p["passed"], q["passed"]);
    EXPECT_EQ(p["failed"], 0);
  }
  EXPECT_NE(four.text.find("PASS: 2 of 2 properties passed all 404 cases over 4 of 4 shards"), std::string::npos) << four.text;
}

TEST(CP4_Merge, AFailureInOneShardReachesTheMerge) {
  const std::string dir = fresh_dir("fail");
  const std::vector<std::string> props = kCatches;
  for (int i = 0; i < 4; ++i) {
    const auto r = run_here(Shard{i, 4, "t"}, dir, 404, i == 2 ? warm_mutant() : prop::Context{}, props);
    EXPECT_EQ(r.passed(), i != 2);
  }
  const Merged m = merge({dir});
  EXPECT_EQ(m.code, 1) << m.text;
  EXPECT_EQ(m.report["passed"], false);
  ASSERT_EQ(m.report["failures"].size(), 1u) << m.text;
  const json& f = m.report["failures"][0];
  EXPECT_EQ(f["property"], props[0]);
  EXPECT_EQ(f["shard"], 2);
  EXPECT_NE(f["reproduce"].get<std::string>().find("RC_PARAMS=\"reproduce="), std::string::npos);
  EXPECT_TRUE(fs::exists(f["counterexample"].get<std::string>())) << f.dump();
  EXPECT_EQ(m.report["properties"][0]["failed"], 1);
  EXPECT_LT(m.report["properties"][0]["passed"].get<int>(), 404);
  EXPECT_NE(m.text.find("FAIL " + props[0] + " in shard 2"), std::string::npos) << m.text;
  EXPECT_NE(m.text.find("reproduce: RC_PARAMS="), std::string::npos) << m.text;
}

TEST(CP4_Merge, MissingDuplicatedOrNoShardsFail) {
  const std::string dir = fresh_dir("missing"), dup = fresh_dir("dup"), empty = fresh_dir("empty");
  for (int i : {0, 2, 3}) run_here(Shard{i, 4, "t"}, dir, 404);
  Merged m = merge({dir});
  EXPECT_EQ(m.code, 1);
  EXPECT_NE(m.text.find("missing shard 1 of 4"), std::string::npos) << m.text;
  run_here(Shard{1, 4, "t"}, dir, 404);
  EXPECT_EQ(merge({dir}).code, 0);
  fs::copy_file(dir + "/shard-3-of-4.json", dup + "/shard-3-of-4.json");
  m = merge({dir, dup});
  EXPECT_EQ(m.code, 1);
  EXPECT_NE(m.text.find("shard 3 was read 2 times"), std::string::npos) << m.text;
  m = merge({empty});
  EXPECT_EQ(m.code, 1);
  EXPECT_NE(m.text.find("no shard file"), std::string::npos) << m.text;
  EXPECT_EQ(m.report["passed"], false);
  EXPECT_FALSE(m.report.contains("campaign"));  // nothing read: no campaign made up
}

TEST(CP4_Merge, ShardsOfDifferentCampaignsOrBadInputAreExit2) {
  const std::string a = fresh_dir("camp_a"), b = fresh_dir("camp_b"), bad = fresh_dir("camp_bad");
  run_here(Shard{0, 2, "t"}, a, 202);
  campaign::Plan plan;
  plan.seed = 78;  // another seed: another campaign
  plan.cases = 202;
  plan.properties = kProps;
  plan.shard = Shard{1, 2, "t"};
  plan.out = b;
  std::ostringstream log;
  campaign::run_shard(plan, {}, log);
  Merged m = merge({a, b});
  EXPECT_EQ(m.code, 2);
  EXPECT_NE(m.text.find("different campaigns (seed 77 vs 78)"), std::string::npos) << m.text;
  std::ofstream(bad + "/shard-0-of-1.json") << "{\"akv_campaign_shard\": 1";
  m = merge({bad});
  EXPECT_EQ(m.code, 2);
  EXPECT_NE(m.text.find("shard-0-of-1.json"), std::string::npos) << m.text;
  EXPECT_EQ(merge({a + "/no-such-folder"}).code, 2);
  // A file renamed to another shard's name, and things under a shard file's name that are not
  // files (a folder, a looping link): each names itself, exit 2, never skipped.
  const std::string renamed = fresh_dir("camp_renamed");
  fs::copy_file(a + "/shard-0-of-2.json", renamed + "/shard-1-of-2.json");
  m = merge({renamed});
  EXPECT_EQ(m.code, 2);
  EXPECT_NE(m.text.find("not the shard its name says"), std::string::npos) << m.text;
  const std::string odd = fresh_dir("camp_odd");
  fs::create_directory(odd + "/shard-1-of-2.json");
  m = merge({odd});
  EXPECT_EQ(m.code, 2);
  EXPECT_NE(m.text.find("shard-1-of-2.json: not a regular file"), std::string::npos) << m.text;
  const std::string loop = fresh_dir("camp_loop");
  fs::create_symlink("shard-1-of-2.json", loop + "/shard-0-of-2.json");
  fs::create_symlink("shard-0-of-2.json", loop + "/shard-1-of-2.json");
  m = merge({loop});
  EXPECT_EQ(m.code, 2) << m.text;
  // RC_PARAMS' max_size in one shard's environment draws other cases: another campaign.
  const std::string rc = fresh_dir("camp_rc");
  auto args = campaign_args(202, rc);
  args.insert(args.end(), {"--shard", "0/2"});
  ASSERT_EQ(run_akv(args, shard_env()).code, 0);
  args.back() = "1/2";
  ASSERT_EQ(run_akv(args, shard_env("export RC_PARAMS=max_size=5;")).code, 0);
  m = merge({rc});
  EXPECT_EQ(m.code, 2);
  EXPECT_NE(m.text.find("RapidCheck max_size 100 vs 5"), std::string::npos) << m.text;
}

TEST(CP5_CampaignCli, BadShardOptionsAreExit2BeforeAnythingRuns) {
  const std::string out = fresh_dir("cli");
  std::ofstream(out + "/not-a-folder") << "x";  // a file where an --out below needs a folder
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"campaign", "--cases", "3", "--seed", "1", "--shard", "0/4", "--out", out}, "--cases 3 is fewer than the 4 shards"},
      {{"campaign", "--cases", "8", "--shard", "0/4", "--out", out}, "--seed"},
      {{"campaign", "--cases", "8", "--seed", "1", "--shard", "4/4", "--out", out}, "--shard"},
      {{"campaign", "--cases", "8", "--seed", "1", "--shard", "x", "--out", out}, "--shard"},
      {{"campaign", "--cases", "8", "--seed", "1", "--shards", "0", "--out", out}, "--shards"},
      {{"campaign", "--cases", "8", "--seed", "1", "--shards", "4", "--out", out}, "--shards 4 gives only the total"},
      {{"campaign", "--cases", "8", "merge", out}, "merge takes no campaign option"},
      {{"campaign", "--cases", "400", "--seed", "1", "--shard", "0/4", "--out", out}, "fewer than RapidCheck's 101 sizes"},
      {{"campaign", "--cases", "8", "--seed", "1", "--out", out + "/not-a-folder/x"}, "--out"},
      {{"campaign", "merge"}, "DIR"},
  };
  for (const auto& [args, named] : cases) {
    const CliRun r = run_akv(args, shard_env());
    EXPECT_EQ(r.code, 2) << r.out << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
    EXPECT_NE(r.err.find(named), std::string::npos) << r.err;
  }
  const CliRun r = run_akv({"campaign", "--cases", "8", "--seed", "1", "--out", out}, shard_env("export GTEST_SHARD_INDEX=9 GTEST_TOTAL_SHARDS=4;"));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("GTEST_SHARD_INDEX='9'"), std::string::npos) << r.err;
  const CliRun rc = run_akv({"campaign", "--cases", "8", "--seed", "1", "--out", out}, shard_env("export RC_PARAMS=max_size=abc;"));
  EXPECT_EQ(rc.code, 2) << rc.out << rc.err;
  EXPECT_NE(rc.err.find("RC_PARAMS"), std::string::npos) << rc.err;
  EXPECT_TRUE(rc.out.empty()) << rc.out;
  // Nothing ran, nothing written (but the stand-in file).
  EXPECT_EQ(std::distance(fs::directory_iterator(out), fs::directory_iterator()), 1);
}

}  // namespace
}  // namespace akv::test
