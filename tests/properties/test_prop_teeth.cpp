// The suite's teeth (spec/properties.md "Does the suite catch bugs?"): run the properties
// against deliberately broken backends; each must fail, shrink to a small case, and leave a
// counterexample file that `akv witness` parses and re-runs.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "reference/chat.hpp"
#include "tests/properties/mutants.hpp"
#include "verify/props/counterexample.hpp"
#include "verify/props/harness.hpp"

namespace akv::test {
namespace {

prop::Outcome run_on_mutant(const std::string& id, Mutation m, const std::string& reproduce = "") {
  const prop::PropertyDef* p = prop::find_property(id);
  EXPECT_NE(p, nullptr);
  prop::Context ctx;
  ctx.backend = "mutant";
  ctx.factory = [m](std::shared_ptr<const Model> model) { return std::make_unique<MutantBackend>(std::move(model), m); };
  rc::detail::TestParams params;
  params.seed = 12345;
  params.maxSuccess = 200;
  rc::detail::TestListener* quiet = nullptr;
  struct Silent final : rc::detail::TestListener {
    void onTestCaseFinished(const rc::detail::CaseDescription&) override {}
    void onShrinkTried(const rc::detail::CaseDescription&, bool) override {}
    void onTestFinished(const rc::detail::TestMetadata&, const rc::detail::TestResult&) override {}
  } silent;
  quiet = &silent;
  return prop::run_property(*p, ctx, params, quiet, reproduce);
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
  const std::string cmd = std::string(AKV_CLI) + " witness " + path + " " + f.witness_args + " > /dev/null";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
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

// Every property of the registry runs as a GoogleTest in this binary, under its own name.
TEST(E1_PropRegistry, EveryPropertyHasItsTest) {
  const auto* unit = ::testing::UnitTest::GetInstance();
  for (const prop::PropertyDef& p : prop::properties()) {
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
