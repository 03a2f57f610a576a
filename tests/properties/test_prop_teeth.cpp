// The suite's teeth (spec/properties.md "Does the suite catch bugs?"): run the properties
// against deliberately broken backends (tests/properties/mutants.hpp) and kernel libraries of the
// catalog of broken kernels (plugins/broken); each must fail, shrink to a small case, and leave
// a counterexample file that `akv witness` parses and re-runs.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <fstream>

#include <cstdlib>
#include <filesystem>
#include <set>

#include "readers/conversation/chat_parse.hpp"
#include "reference/chat.hpp"
#include "reference/synthetic_spec.hpp"
#include "tests/broken_catalog.hpp"
#include "tests/properties/mutants.hpp"
#include "runtime/backends.hpp"
#include "verify/props/counterexample.hpp"
#include "verify/props/harness.hpp"

namespace akv::test {
namespace {

// The CI profile's context on mutant `m`.
prop::Context mutant_context(Mutation m) {
  prop::Context ctx;
  ctx.backend = "mutant";
  ctx.factory = [m](std::shared_ptr<const Model> model, const BackendOptions&) {
    return std::make_unique<MutantBackend>(std::move(model), m);
  };
  return ctx;
}

// The CI profile's context on the catalog's library `name`, the composed forward over its ops
// (`--kernels`). It draws threads (the library's set_threads) and ISAs as "cpu" does, so a
// counterexample file re-runs on the cpu backend in `akv witness`; the library ignores the ISA.
prop::Context catalog_context(const std::string& name) {
  prop::Context ctx;
  ctx.backend = "cpu";
  ctx.factory = [lib = broken_kernels(name)](std::shared_ptr<const Model> model, const BackendOptions& opt) {
    BackendOptions o;
    o.kernels = lib;
    o.threads = opt.threads > 0 ? opt.threads : 2;
    return make_backend("cpu", std::move(model), o);
  };
  return ctx;
}

prop::Outcome run_in(const std::string& id, const prop::Context& ctx, int cases = 200, const std::string& reproduce = "") {
  const prop::PropertyDef* p = prop::find_property(id);
  EXPECT_NE(p, nullptr);
  rc::detail::TestParams params;
  params.seed = 12345;
  params.maxSuccess = cases;
  return prop::run_property(*p, ctx, params, &check::quiet_listener(), reproduce);
}

prop::Outcome run_on_mutant(const std::string& id, Mutation m, const std::string& reproduce = "") {
  return run_in(id, mutant_context(m), 200, reproduce);
}

prop::Outcome run_on_catalog(const std::string& id, const std::string& name) { return run_in(id, catalog_context(name)); }

// The thread counts of the backends a counterexample made.
std::set<int> thread_counts(const prop::Counterexample& c) {
  std::set<int> t;
  for (const gen::BackendDraw& d : c.backends) t.insert(d.threads);
  return t;
}

// Whether a drawn shape has a matmul reduction length (hidden, q_dim, ffn) that is not a
// multiple of 16: where the batched-tail defect shows.
bool has_tail(const gen::ModelChoice& m) {
  if (!is_synthetic_spec(m.config)) return false;
  const Config c = synthetic_config(m.config);
  return c.hidden % 16 != 0 || c.q_dim() % 16 != 0 || c.ffn % 16 != 0;
}

// `akv witness FILE ARGS` on a counterexample file: the real backend is exact on it. A shrunk
// case may evict a span whose removal moves no logit (two equal tokens): the witness then fails
// on its control (E2), never on exactness.
void expect_witness_is_exact(const std::string& path, const std::string& args) {
  const std::string out = path + ".out";
  const std::string cmd = std::string(AKV_CLI) + " witness " + path + " " + args + " --json > " + out;
  const int st = std::system(cmd.c_str());
  std::ifstream in(out);
  const nlohmann::json j = nlohmann::json::parse(in);
  EXPECT_TRUE(j["exact"].get<bool>()) << cmd;
  EXPECT_EQ(j["passed"].get<bool>(), j["control_moved"].get<bool>()) << cmd;
  EXPECT_EQ(st == 0, j["passed"].get<bool>()) << cmd;
}

TEST(I1_PropTeeth, ChunkSensitiveBackendIsCaughtAndShrunk) {
  const prop::Outcome o = run_on_mutant("I1_PropInvariance.Chunkings", Mutation::kChunkSensitive);
  ASSERT_FALSE(o.passed);
  EXPECT_NE(o.reproduce.find("reproduce="), std::string::npos);
  ASSERT_TRUE(o.counterexample.has_value());
  const auto& c = o.counterexample->conv;
  // The smallest failing case: two tokens (one call of m = 2 vs two calls), smallest ids.
  EXPECT_EQ(c.total_tokens(), 2u) << o.message;
  EXPECT_LE(c.spans.size(), 2u) << o.message;
  for (const auto& s : c.spans)
    for (Token t : s.tokens) EXPECT_EQ(t, 0) << o.message;
}

TEST(E1_PropTeeth, WarmStateBackendIsCaughtShrunkAndWitnessed) {
  const prop::Outcome o = run_on_mutant("E1_PropEvictEqualsNever.Requests", Mutation::kWarmState);
  ASSERT_FALSE(o.passed);
  ASSERT_TRUE(o.counterexample.has_value());
  const auto& c = o.counterexample->conv;
  EXPECT_LE(c.spans.size(), 3u) << o.message;
  EXPECT_LE(c.total_tokens(), 3u) << o.message;

  // The file parses back to the same spans and `akv witness` re-runs it (exit 0: the real
  // reference backend is exact on it).
  const prop::CounterexampleFile f = prop::counterexample_file(*o.counterexample, "E1_PropEvictEqualsNever.Requests", "reference", o.reproduce);
  ASSERT_TRUE(f.witness_applies) << f.json;
  const Conversation parsed = parse_conversation(f.json);
  std::vector<std::vector<Token>> want;
  for (const auto& s : c.spans)
    if (!s.tokens.empty()) want.push_back(s.tokens);
  ASSERT_EQ(parsed.messages.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(encode_message(parsed.messages[i]), want[i]);
  const std::string dir = (std::filesystem::temp_directory_path() / "akv_teeth").string();
  const std::string path = prop::write_counterexample(dir, "e1.json", f);
  expect_witness_is_exact(path, f.witness_args);
}

TEST(I1_PropTeeth, ReproduceStringReplaysTheShrunkCase) {
  const prop::Outcome o = run_on_mutant("I1_PropInvariance.Chunkings", Mutation::kChunkSensitive);
  ASSERT_FALSE(o.passed);
  ASSERT_EQ(o.reproduce.rfind("reproduce=", 0), 0u);
  const prop::Outcome again = run_on_mutant("I1_PropInvariance.Chunkings", Mutation::kChunkSensitive,
                                            o.reproduce.substr(std::string("reproduce=").size()));
  ASSERT_FALSE(again.passed);
  ASSERT_TRUE(again.counterexample.has_value());
  EXPECT_EQ(again.cases, 0);  // the replay runs the shrunk case only
  EXPECT_EQ(again.counterexample->conv.total_tokens(), o.counterexample->conv.total_tokens());
  EXPECT_EQ(again.message.substr(again.message.find('\n')), o.message.substr(o.message.find('\n')));
}

TEST(I1_PropTeeth, WarmStateBackendFailsEarlierWork) {
  const prop::Outcome o = run_on_mutant("I1_PropInvariance.EarlierWork", Mutation::kWarmState);
  EXPECT_FALSE(o.passed);
}

TEST(E1_PropTeeth, WarmStateBackendFailsTheStateMachine) {
  const prop::Outcome o = run_on_mutant("E1_PropStateMachine.CommandSequences", Mutation::kWarmState);
  ASSERT_FALSE(o.passed);
  EXPECT_NE(o.message.find("Append"), std::string::npos) << o.message;  // commands print readably
}

// A reduction split by the thread count: a witness under one thread count passes it;
// drawn threads (1-4 per backend of a case) catch it in I1 and E1.
TEST(I1_PropTeeth, ThreadSplitReductionIsCaughtByDrawnThreads) {
  const prop::Outcome o = run_on_catalog("I1_PropInvariance.Chunkings", "split_k_by_threads");
  ASSERT_FALSE(o.passed);
  ASSERT_TRUE(o.counterexample.has_value());
  EXPECT_GE(thread_counts(*o.counterexample).size(), 2u) << o.message;
  EXPECT_NE(o.message.find(" threads, isa "), std::string::npos) << o.message;  // the case prints its draws
  EXPECT_NE(o.message.find("scratch "), std::string::npos) << o.message;
  EXPECT_LE(o.counterexample->conv.total_tokens(), 2u) << o.message;
}

TEST(E1_PropTeeth, ThreadSplitReductionIsCaughtByDrawnThreads) {
  const prop::Outcome o = run_on_catalog("E1_PropEvictEqualsNever.Requests", "split_k_by_threads");
  ASSERT_FALSE(o.passed);
  ASSERT_TRUE(o.counterexample.has_value());
  EXPECT_GE(thread_counts(*o.counterexample).size(), 2u) << o.message;
}

// The control: with every backend at 2 threads (as the witness runs) the same mutant passes.
TEST(I1_PropTeeth, ThreadSplitReductionPassesAtOneFixedThreadCount) {
  prop::Context ctx = catalog_context("split_k_by_threads");
  ctx.profile.min_threads = ctx.profile.max_threads = 2;
  const prop::Outcome o = run_in("I1_PropInvariance.Chunkings", ctx, 60);
  EXPECT_TRUE(o.passed) << o.message;
  EXPECT_EQ(o.cases, 60);
}

// A tail defect (n mod 16 terms summed apart in calls of >= 2 rows): invisible on tiny and
// small, whose reduction lengths are multiples of 16, caught on drawn shapes.
TEST(I1_PropTeeth, BatchedTailDefectIsCaughtOnDrawnShapes) {
  const prop::Outcome o = run_on_catalog("I1_PropInvariance.Chunkings", "tail_by_m");
  ASSERT_FALSE(o.passed);
  ASSERT_TRUE(o.counterexample.has_value());
  EXPECT_TRUE(has_tail(o.counterexample->model)) << o.message;
  EXPECT_NE(o.message.find("model synthetic:hidden="), std::string::npos) << o.message;  // printed as M12 spec
  // A call of >= 2 rows against calls of one; how many tokens it takes until a rounding of the
  // tail differs depends on the values (seed 12345: 6 tokens on hidden=4, ffn=17).
  EXPECT_GE(o.counterexample->conv.total_tokens(), 2u) << o.message;
  EXPECT_LE(o.counterexample->conv.total_tokens(), 16u) << o.message;
}

TEST(E1_PropTeeth, BatchedTailDefectIsCaughtAndTheShapeReRuns) {
  const prop::Outcome o = run_on_catalog("E1_PropEvictEqualsNever.Requests", "tail_by_m");
  ASSERT_FALSE(o.passed);
  ASSERT_TRUE(o.counterexample.has_value());
  EXPECT_TRUE(has_tail(o.counterexample->model)) << o.message;
  // The file names the shape as `akv witness --model` takes it; the real cpu backend is exact on it.
  const prop::CounterexampleFile f = prop::counterexample_file(*o.counterexample, "E1_PropEvictEqualsNever.Requests", "cpu", o.reproduce);
  ASSERT_TRUE(f.witness_applies) << f.json;
  EXPECT_NE(f.witness_args.find("--model synthetic:hidden="), std::string::npos) << f.witness_args;
  EXPECT_NE(f.witness_args.find("--threads "), std::string::npos) << f.witness_args;
  EXPECT_NE(f.json.find("\"backends\""), std::string::npos) << f.json;
  const std::string path = prop::write_counterexample((std::filesystem::temp_directory_path() / "akv_teeth").string(), "tail.json", f);
  expect_witness_is_exact(path, f.witness_args);
}

// The control: without drawn shapes (tiny and small only) the tail mutant passes.
TEST(I1_PropTeeth, BatchedTailDefectPassesOnTheNamedConfigs) {
  prop::Context ctx = catalog_context("tail_by_m");
  ctx.profile.shape_per_mille = 0;
  const prop::Outcome o = run_in("I1_PropInvariance.Chunkings", ctx, 60);
  EXPECT_TRUE(o.passed) << o.message;
  EXPECT_EQ(o.cases, 60);
}

// Every property of the registry runs as a GoogleTest in this binary, under its own name.
TEST(E1_PropRegistry, EveryPropertyHasItsTest) {
  const auto* unit = ::testing::UnitTest::GetInstance();
  for (const prop::PropertyDef& p : prop::properties()) {
    // The properties within a cache type are akv_prop_kv_tests' (its E1_PropRegistry test).
    if (p.suite.size() >= 12 && p.suite.compare(p.suite.size() - 12, 12, "_PropKvTypes") == 0) continue;
    bool found = false;
    for (int i = 0; i < unit->total_test_suite_count(); ++i) {
      const auto* s = unit->GetTestSuite(i);
      if (std::string(s->name()) != "Backends/" + p.suite) continue;
      for (int j = 0; j < s->total_test_count(); ++j)
        found = found || std::string(s->GetTestInfo(j)->name()).rfind(p.name + "/", 0) == 0;
    }
    EXPECT_TRUE(found) << p.id() << " has no TEST_P in tests/properties/";
  }
}

}  // namespace
}  // namespace akv::test
