// The command line as an auditor and a CI job meet it (spec/input.md IN4-IN7, spec/bounds.md
// B15): strict option values, exit codes, JSON output whatever the bytes, errors that name the
// real problem, vacuous bounds.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "tests/sanitizers.hpp"
#include "cli_support.hpp"
#include "support.hpp"

using namespace akv;
using test::run_akv;

namespace {
const std::string kConv = "ja01_banking_bill_important_instructions.json";  // 3 messages, poisoned [1]

// Exit 2, one line on stderr naming `needle`, nothing on stdout (IN5).
void expect_usage_error(const test::CliRun& r, const std::string& needle, const std::string& what) {
  EXPECT_EQ(r.code, 2) << what << "\n" << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << what << ": " << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << what << ": " << r.err;
  EXPECT_TRUE(test::empty_or_json_error(r.out)) << what << r.out;
}
}  // namespace

// The issue's fifth case: `--evict ""` evicted message 0 and passed.
TEST(IN4_StrictOptions, EmptyNegativeNonNumericOrOutOfRangeIsExitTwoNamingTheOption) {
  const std::string f = test::example(kConv);
  const struct {
    std::vector<std::string> args;
    std::string needle;
  } cases[] = {
      {{"witness", f, "--evict", ""}, "--evict"},
      {{"witness", f, "--evict", "1,,2"}, "--evict"},
      {{"witness", f, "--evict", "-1"}, "--evict"},
      {{"witness", f, "--evict", " 1"}, "--evict"},
      {{"witness", f, "--evict", "1,"}, "--evict"},
      {{"witness", f, "--seed", ""}, "--seed"},
      {{"witness", f, "--seed", "-1"}, "--seed"},
      {{"witness", f, "--seed", "1e3"}, "--seed"},
      {{"witness", f, "--seed", "99999999999999999999"}, "--seed"},
      {{"witness", f, "--threads", ""}, "--threads"},
      {{"witness", f, "--threads", "-5"}, "--threads"},
      {{"witness", f, "--threads", "0x10"}, "--threads"},
      {{"witness", f, "--threads", "1000"}, "--threads"},
      {{"witness", f, "--model", ""}, "--model"},
      {{"witness", f, "--backend", ""}, "--backend"},
      {{"witness", f, "--isa", ""}, "--isa"},
      {{"witness", ""}, "FILE"},
      {{"bounds", f, "--max-tokens", "-1"}, "--max-tokens"},
      {{"bounds", f, "--max-tokens", ""}, "--max-tokens"},
      {{"bounds", f, "--terms", "0"}, "--terms"},
      {{"bounds", f, "--seed", "x"}, "--seed"},
      {{"campaign", "--cases", "-3"}, "--cases"},
      {{"campaign", "--cases", ""}, "--cases"},
      {{"campaign", "--cases", "0"}, "--cases"},
      {{"campaign", "--seed", "-1"}, "--seed"},
  };
  for (const auto& c : cases) {
    std::string what;
    for (const auto& a : c.args) what += "[" + a + "] ";
    expect_usage_error(run_akv(c.args), c.needle, what);
  }
}

TEST(IN4_StrictOptions, EnvironmentVariablesAreStrict) {
  const std::string f = test::example(kConv);
  for (const char* env : {"AKV_THREADS=", "AKV_THREADS=abc", "AKV_THREADS=-1", "AKV_THREADS=0", "AKV_THREADS=1000"})
    expect_usage_error(run_akv({"witness", f, "--model", "tiny"}, env), "$AKV_THREADS", env);
  for (const char* env : {"AKV_ISA=", "AKV_ISA=sse9"}) expect_usage_error(run_akv({"witness", f, "--model", "tiny"}, env), "$AKV_ISA", env);
  // Valid values still work.
  EXPECT_EQ(run_akv({"witness", f, "--model", "tiny"}, "AKV_THREADS=3 AKV_ISA=portable").code, 0);
}

TEST(IN4_StrictOptions, BoundsModelHelpAndValuesFromOneRegistry) {
  const test::CliRun help = run_akv({"bounds", "--help"});
  EXPECT_EQ(help.code, 0);
  for (const std::string& name : config_names()) EXPECT_NE(help.out.find(name), std::string::npos) << name << "\n" << help.out;
  expect_usage_error(run_akv({"bounds", test::example(kConv), "--model", "huge"}), "--model", "huge");
}

TEST(IN5_ExitCodes, ZeroOneTwoAndNoStdoutOnError) {
  EXPECT_EQ(run_akv({"witness", test::example(kConv), "--model", "tiny"}).code, 0);
  const test::CliRun bad = run_akv({"witness", test::example(kConv), "--model", "tiny", "--evict", "7", "--json"});
  expect_usage_error(bad, "out of range", "--evict 7");
  const test::CliRun usage = run_akv({"witness"});
  EXPECT_EQ(usage.code, 2);
  EXPECT_TRUE(test::empty_or_json_error(usage.out)) << usage.out;
}

// IN6: the file's path and the report carry any bytes; --json is valid JSON all the same.
TEST(IN6_JsonOutput, ValidJsonWhateverBytesThePathCarries) {
  const std::string text = test::slurp(test::example(kConv));
  const std::string path = test::temp_bytes("bad\xff\xfe\x01name.json", text);
  const test::CliRun r = run_akv({"witness", path, "--model", "tiny", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  nlohmann::json j;
  ASSERT_NO_THROW(j = nlohmann::json::parse(r.out)) << r.out.substr(0, 400);
  EXPECT_TRUE(j["exact"].get<bool>());
  EXPECT_NE(j["file"].get<std::string>().find("\xef\xbf\xbd"), std::string::npos);  // U+FFFD in place of 0xff
  EXPECT_EQ(j["ignored_fields"], nlohmann::json({"source", "tags"}));
}

TEST(IN6_JsonOutput, BoundsJsonIsValidToo) {
  const test::CliRun r = run_akv({"bounds", test::example(kConv), "--max-tokens", "3", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  nlohmann::json j;
  ASSERT_NO_THROW(j = nlohmann::json::parse(r.out));
  EXPECT_EQ(j["verdict"], "SOUND");
}

TEST(IN7_ErrorsNameTheProblem, ThroughTheBinary) {
  const std::string f = test::example(kConv);
  expect_usage_error(run_akv({"witness", ::testing::TempDir(), "--model", "tiny"}), "is a directory", "directory");
  expect_usage_error(run_akv({"witness", test::temp_bytes("p.json", R"({"messages": [{"role": "user", "content": "a"},
      {"role": "user", "content": "b"}], "poisoned": ["1"]})")}),
                     "poisoned[0]: expected an integer message index, got string", "poisoned string");
  const std::string toks = test::temp_bytes("tok.json", R"({"messages": [{"role": "user", "content": "a"},
      {"role": "user", "tokens": [5, 999]}], "poisoned": [1]})");
  expect_usage_error(run_akv({"witness", toks, "--model", "tiny"}), "invalid_token: " + toks + ": messages[1].tokens[1]: token id 999", "token");
  expect_usage_error(run_akv({"bounds", toks}), "messages[1].tokens[1]", "token (bounds)");
  expect_usage_error(run_akv({"witness", f, "--model", "tiny", "--backend", "gpu9"}), "unknown_backend: unknown backend 'gpu9'", "gpu9");
  const test::CliRun cuda = run_akv({"witness", f, "--model", "tiny", "--backend", "cuda"});
  if (cuda.code != 0) expect_usage_error(cuda, "backend_unavailable", "cuda without a device");
  expect_usage_error(run_akv({"witness", f, "--model", "huge"}), "unknown_model", "huge");
}

// The issue's fourth case through the binary: (ulimit -v; --threads 256) never returned.
TEST(IN7_ErrorsNameTheProblem, ThreadsThatCannotStartExitTwo) {
#if defined(AKV_ASAN) || defined(AKV_TSAN)
  GTEST_SKIP() << "the sanitizer's shadow memory reserves terabytes of address space: ulimit -v cannot apply";
#else
  const test::CliRun r = run_akv({"witness", test::example(kConv), "--model", "tiny", "--threads", "256"}, "ulimit -v 1000000;", 60);
  if (r.code == 0) GTEST_SKIP() << "256 threads started within 1 GB of address space here";
  expect_usage_error(r, "cannot start 256 threads", "ulimit");
#endif
}

// The issue's sixth case: +inf bounds printed SOUND and exit 0.
TEST(B15_VacuousBound, InfiniteBoundsExitOneAndSaySo) {
  const test::CliRun r = run_akv({"bounds", test::example(kConv), "--terms", "1", "--max-tokens", "4"});
  EXPECT_EQ(r.code, 1) << r.out.substr(r.out.size() > 600 ? r.out.size() - 600 : 0);
  EXPECT_NE(r.out.find("VACUOUS"), std::string::npos);
  EXPECT_EQ(r.out.find("SOUND"), std::string::npos);
  const test::CliRun j = run_akv({"bounds", test::example(kConv), "--terms", "1", "--max-tokens", "4", "--json"});
  EXPECT_EQ(j.code, 1);
  const nlohmann::json doc = nlohmann::json::parse(j.out);
  EXPECT_EQ(doc["verdict"], "VACUOUS");
  EXPECT_FALSE(doc["sound"].get<bool>());
  EXPECT_GT(doc["vacuous"].get<size_t>(), 0u);
  // The same tokens at the default terms have finite bounds: SOUND, exit 0.
  EXPECT_EQ(run_akv({"bounds", test::example(kConv), "--max-tokens", "4"}).code, 0);
}
