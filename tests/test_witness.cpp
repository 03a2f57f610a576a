// The witness, through the library and the `akv` binary (spec/operations.md O5).
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sys/wait.h>

#include "leakage/approx_evict.hpp"
#include "readers/conversation/chat_parse.hpp"
#include "reference/error.hpp"
#include "support.hpp"
#include "wrapped_backend.hpp"
#include "verify/witness.hpp"

using namespace akv;

namespace {

struct Cli {
  int code;
  std::string out;  // stdout and stderr together
};

// `akv ARGS`; a witness run that names no model runs the synthetic tiny one (the CLI's
// default is the real model, spec/operations.md O5).
Cli akv_cli(const std::string& args) {
  const bool tiny = args.rfind("witness ", 0) == 0 && args.find("--model") == std::string::npos;
  const std::string cmd = std::string(AKV_CLI) + " " + args + (tiny ? " --model tiny" : "") + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  const int st = pclose(p);
  return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, out};
}

// The witness defaults to the real model (spec/operations.md O5); these tests run the synthetic tiny one.
WitnessOptions tiny_options() {
  WitnessOptions o;
  o.model = "tiny";
  return o;
}

std::string temp_file(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + "akv_" + name;
  std::ofstream(path) << text;
  return path;
}

}  // namespace

class O5_WitnessPoisoned : public ::testing::TestWithParam<std::string> {};

TEST_P(O5_WitnessPoisoned, EvictPoisonedIsExactAndTheControlMoves) {
  const Cli r = akv_cli("witness " + test::example(GetParam()) + " --evict-poisoned --json");
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["evict_vs_never_max_abs"].get<double>(), 0.0);
  EXPECT_GT(j["poison_vs_never_max_abs"].get<double>(), 0.0);
  EXPECT_TRUE(j["exact"].get<bool>());
  EXPECT_TRUE(j["passed"].get<bool>());
  EXPECT_TRUE(j["prefix_untouched"].get<bool>());
  EXPECT_EQ(j["tokens_recomputed"], j["tokens_survivors"]);
  EXPECT_EQ(j["cache_sha256_evicted"], j["cache_sha256_never"]);
  EXPECT_EQ(j["logits_sha256_evicted"], j["logits_sha256_never"]);
  EXPECT_NE(j["logits_sha256_poisoned"], j["logits_sha256_never"]);
  EXPECT_EQ(j["tokens_never"].get<size_t>(), j["truncated_at"].get<size_t>() + j["tokens_recomputed"].get<size_t>());
}

// Every bundled (= shared) conversation that has a "poisoned" list.
INSTANTIATE_TEST_SUITE_P(Bundled, O5_WitnessPoisoned,
                         ::testing::Values("ad01_banking_ut0_gpt4omini.json", "ad02_slack_ut16_claude35.json",
                                           "ad03_travel_ut2_claude35.json", "ad05_workspace_ut29_claude35.json",
                                           "ad06_banking_ut3_llama3_70b.json", "ad08_slack_ut19_claude35.json",
                                           "ad09_workspace_ut15_claude35.json", "ia01_dh_base_gmail_read_email.json",
                                           "ia02_dh_enhanced_evernote_search.json",
                                           "ja01_banking_bill_important_instructions.json"),
                         [](const auto& i) {
                           std::string n = i.param.substr(0, i.param.find('.'));
                           for (char& ch : n)
                             if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return n;
                         });

// The same through the scalar reference, the semantics itself, on the shorter files.
class O5_WitnessReference : public ::testing::TestWithParam<std::string> {};

TEST_P(O5_WitnessReference, EvictPoisonedIsExact) {
  const Cli r = akv_cli("witness " + test::example(GetParam()) + " --evict-poisoned --backend reference --json");
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["backend"], "reference");
  EXPECT_EQ(j["evict_vs_never_max_abs"].get<double>(), 0.0);
  EXPECT_GT(j["poison_vs_never_max_abs"].get<double>(), 0.0);
  EXPECT_EQ(j["cache_sha256_evicted"], j["cache_sha256_never"]);
}

INSTANTIATE_TEST_SUITE_P(Bundled, O5_WitnessReference,
                         ::testing::Values("ad01_banking_ut0_gpt4omini.json", "ia02_dh_enhanced_evernote_search.json",
                                           "ja01_banking_bill_important_instructions.json"),
                         [](const auto& i) { return i.param.substr(0, 4); });

TEST(O5_Witness, CleanConversationWithExplicitSpansAndTextOutput) {
  const Cli r = akv_cli("witness " + test::example("ja03_clean_banking_march_spending.json") + " --evict 1,2");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("evict-vs-never  max|delta| = 0 "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("PASS"), std::string::npos) << r.out;
}

TEST(O5_Witness, SmallModelAndSeed) {
  const Cli r = akv_cli("witness " + test::example("ja01_banking_bill_important_instructions.json") +
                        " --evict 1 --model small --seed 7 --json");
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["model"], "small");
  EXPECT_EQ(j["seed"], 7);
  EXPECT_GT(j["tokens_recomputed"].get<size_t>(), 0u);
  EXPECT_GT(j["poison_vs_never_max_abs"].get<double>(), 0.0);
}

// O5's --logit-rows: every row's logits or the last only, both exact on akv's backends, with
// the same caches (a row's bits do not depend on which rows' logits were asked for, O7).
TEST(O5_Witness, LogitRowsAllOrLastAreBothExact) {
  std::string cache[2];
  int i = 0;
  for (const char* rows : {"last", "all"}) {
    const Cli r = akv_cli("witness " + test::example("ja01_banking_bill_important_instructions.json") +
                          " --evict 1 --logit-rows " + rows + " --json");
    ASSERT_EQ(r.code, 0) << rows << r.out;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["evict_vs_never_max_abs"].get<double>(), 0.0) << rows;
    EXPECT_GT(j["poison_vs_never_max_abs"].get<double>(), 0.0) << rows;
    cache[i++] = j["cache_sha256_evicted"].get<std::string>();
  }
  EXPECT_EQ(cache[0], cache[1]);
}

TEST(O5_Witness, CatchesABackendThatBreaksInvariance) {
  // The witness's own control: a backend whose bits depend on chunking must fail it.
  const Conversation c = load_conversation(test::example("ad01_banking_ut0_gpt4omini.json"));
  const WitnessReport r = run_witness(c, tiny_options(), [](std::shared_ptr<const Model> m) {
    return std::make_unique<test::ChunkSensitive>(std::move(m));
  });
  EXPECT_FALSE(r.exact());
  EXPECT_FALSE(r.caches_identical);
  EXPECT_TRUE(r.prefix_untouched);
}

// The honest run: the witness's own measurements (not the session's statistics) show the
// prefix untouched and exactly |X| entries written.
TEST(O5_Witness, MeasuresThePrefixAndTheWritesOnTheCache) {
  const Conversation c = load_conversation(test::example("ad01_banking_ut0_gpt4omini.json"));
  const WitnessReport r = run_witness(c, tiny_options());
  EXPECT_TRUE(r.passed());
  EXPECT_GT(r.truncated_at, 0u);
  EXPECT_GT(r.tokens_survivors, 0u);
  EXPECT_EQ(r.tokens_survivors, r.tokens_never - r.truncated_at);
  EXPECT_EQ(r.tokens_poisoned, r.truncated_at + r.tokens_evicted + r.tokens_survivors);
  EXPECT_EQ(r.tokens_recomputed, r.tokens_survivors);
  EXPECT_EQ(r.writes_expected, r.tokens_survivors);
  EXPECT_EQ(r.prefix_entries_rewritten, 0u);
  EXPECT_TRUE(r.prefix_untouched);
}

// The witness's teeth for E3/E4: an eviction that rebuilds from position 0 gives the right bits
// and a session that claims |X|, yet the witness reports the full rebuild it measured and fails.
TEST(O5_Witness, CatchesAnEvictionThatRebuildsFromZero) {
  const Conversation c = load_conversation(test::example("ad01_banking_ut0_gpt4omini.json"));
  const WitnessReport r = run_witness(c, tiny_options(), [](std::shared_ptr<const Model> m) {
    return std::make_unique<test::RebuildsFromZero>(std::move(m));
  });
  ASSERT_GT(r.truncated_at, 0u);
  EXPECT_TRUE(r.exact()) << "the rebuild's bits are right (I1): only the measured writes can catch it";
  EXPECT_EQ(r.session_reported_recomputed, r.tokens_survivors) << "the session claims survivors only";
  EXPECT_EQ(r.tokens_recomputed, r.truncated_at + r.tokens_survivors) << "the cache counted the full rebuild";
  EXPECT_FALSE(r.writes_as_expected());
  EXPECT_EQ(r.prefix_entries_rewritten, r.truncated_at);
  EXPECT_FALSE(r.prefix_untouched);
  EXPECT_FALSE(r.passed());
  const nlohmann::json j = to_json(r);
  EXPECT_FALSE(j["passed"].get<bool>());
  EXPECT_FALSE(j["prefix_untouched"].get<bool>());
  EXPECT_EQ(j["tokens_recomputed"].get<size_t>(), r.truncated_at + r.tokens_survivors);
  const std::string text = to_text(r);
  EXPECT_NE(text.find("FAIL"), std::string::npos) << text;
  EXPECT_NE(text.find("the prefix was written (E3)"), std::string::npos) << text;
  EXPECT_NE(text.find("the session reported"), std::string::npos) << text;
}

// verify/ cannot include the leakage room: a non-exact policy runs only through the eviction
// the caller hands in, and without one it is refused before any session is built.
TEST(O5_Witness, ANonExactPolicyWithoutItsEvictionIsBadInput) {
  const Conversation c = load_conversation(test::example("ad01_banking_ut0_gpt4omini.json"));
  WitnessOptions o = tiny_options();
  o.policy = EvictPolicy::kKShift;
  try {
    (void)run_witness(c, o);
    ADD_FAILURE() << "kshift ran without an eviction";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kBadInput) << e.what();
    EXPECT_NE(std::string(e.what()).find("policy kshift: no approximate eviction"), std::string::npos) << e.what();
  }
}

// Approximate policies are measured the same way: kshift rewrites the entries it moves (with two
// spans, the survivors between them move once and those after both twice), mask and keep write
// nothing; none touches the prefix.
TEST(O5_Witness, MeasuresTheWritesOfEachPolicy) {
  const Conversation c = load_conversation(test::example("ad01_banking_ut0_gpt4omini.json"));
  WitnessOptions o = tiny_options();
  o.evict = {1, 3};
  o.policy = EvictPolicy::kExact;
  const WitnessReport exact = run_witness(c, o);
  o.evict = {3};
  const size_t after_3 = run_witness(c, o).tokens_survivors;
  ASSERT_GT(exact.tokens_survivors, after_3);
  o.evict = {1, 3};
  o.approximate = evict_under;
  for (EvictPolicy p : all_policies()) {
    o.policy = p;
    const WitnessReport r = run_witness(c, o);
    const size_t expected = p == EvictPolicy::kExact ? r.tokens_survivors : p == EvictPolicy::kKShift ? exact.tokens_survivors + after_3 : 0;
    EXPECT_EQ(r.tokens_recomputed, expected) << policy_name(p);
    EXPECT_TRUE(r.writes_as_expected()) << policy_name(p);
    EXPECT_TRUE(r.prefix_untouched) << policy_name(p);
    EXPECT_EQ(r.passed(), p == EvictPolicy::kExact) << policy_name(p);
  }
}

TEST(O5_Witness, BadInputExitsTwoWithAOneLineMessage) {
  const std::string long_text(17000, 'a');
  const struct {
    std::string args, needle;
  } cases[] = {
      {temp_file("malformed.json", "{\"messages\": [") + " --evict 0", "malformed JSON"},
      {temp_file("role.json", R"({"messages": [{"role": "robot", "content": "x"}, {"role": "user", "content": "y"}]})") + " --evict 0",
       "unknown role 'robot'"},
      {test::example("ad01_banking_ut0_gpt4omini.json") + " --evict 9", "out of range"},
      {temp_file("empty.json", R"({"messages": []})") + " --evict 0", "empty"},
      {temp_file("long.json", R"({"messages": [{"role": "user", "content": "a"}, {"role": "user", "content": ")" + long_text + "\"}]}") +
           " --evict 0",
       "more than model"},
      {test::example("ad10_clean_banking_ut2_claude35.json"), "nothing to evict"},
      {test::example("ad01_banking_ut0_gpt4omini.json") + " --model huge", "unknown model 'huge'"},
      {test::example("ad01_banking_ut0_gpt4omini.json") + " --backend gpu9", "unknown backend 'gpu9'"},
      {test::example("ja01_banking_bill_important_instructions.json") + " --evict 0,1,2", "every message"},
      {test::example("ja01_banking_bill_important_instructions.json") + " --evict 1,1", "repeated"},
      {"/nonexistent/conv.json --evict 0", "cannot read"},
      {test::example("ad01_banking_ut0_gpt4omini.json") + " --evict 1 --evict-poisoned", "excludes"},
      {test::example("ad01_banking_ut0_gpt4omini.json") + " --logit-rows first", "--logit-rows"},
  };
  for (const auto& c : cases) {
    const Cli r = akv_cli("witness " + c.args);
    EXPECT_EQ(r.code, 2) << c.args << "\n" << r.out;
    EXPECT_NE(r.out.find(c.needle), std::string::npos) << c.args << "\n" << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
  }
}
