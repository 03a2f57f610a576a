// The leakage measurement and `akv leakage` (spec/leakage.md L5, L7, L9) on the tiny model.
#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <filesystem>
#include <fmt/format.h>

#include "cli_support.hpp"
#include "readers/conversation/chat_parse.hpp"
#include "reference/error.hpp"
#include "support.hpp"
#include "leakage/leak_strings.hpp"
#include "leakage/leakage.hpp"
#include "leakage/leakage_report.hpp"

using namespace akv;
namespace fs = std::filesystem;

namespace {
LeakageReport measure(const std::string& file, const std::string& backend = "cpu", size_t tokens = 8,
                      bool positions = true) {
  LeakageOptions opt;
  opt.positions = positions;
  opt.model = "tiny";
  opt.backend = backend;
  opt.continuation = tokens;
  return run_leakage(load_conversation(test::example(file)), test::example(file), opt);
}
// The tiny model's options, `tokens` decoded, no cost rows.
LeakageOptions tiny_leakage(size_t tokens) {
  LeakageOptions opt;
  opt.model = "tiny";
  opt.continuation = tokens;
  opt.positions = false;
  return opt;
}
const PolicyResult& of(const LeakageReport& r, EvictPolicy p) {
  for (const PolicyResult& x : r.policies)
    if (x.policy == p) return x;
  throw std::logic_error("policy not measured");
}
}  // namespace

TEST(L9_Measure, CompareNextDefinitions) {
  const std::vector<float> p{1.0f, 3.0f, 2.0f, 3.0f};
  LogitsCompare c = compare_next(p, p);
  EXPECT_TRUE(c.identical);
  EXPECT_EQ(c.max_abs, 0.0f);
  EXPECT_EQ(c.kl, 0.0);
  EXPECT_TRUE(c.top1_agree);
  EXPECT_EQ(c.rank, 0u);
  EXPECT_EQ(argmax(p), 1u);  // the lowest index of the maximum
  const std::vector<float> q{1.0f, 2.0f, 4.0f, 3.0f};
  c = compare_next(p, q);
  EXPECT_FALSE(c.identical);
  EXPECT_EQ(c.max_abs, 2.0f);
  EXPECT_FALSE(c.top1_agree);
  EXPECT_EQ(c.rank, 2u);  // q: index 2 (4) and index 3 (3 > 2) rank above never's top, index 1
  double kl = 0, zp = 0, zq = 0;
  for (int i = 0; i < 4; ++i) zp += std::exp(p[i] - 3.0), zq += std::exp(q[i] - 4.0);
  for (int i = 0; i < 4; ++i) {
    const double lp = (p[i] - 3.0) - std::log(zp), lq = (q[i] - 4.0) - std::log(zq);
    kl += std::exp(lp) * (lp - lq);
  }
  EXPECT_NEAR(c.kl, kl, 1e-12);  // the formula, not a bits claim: KL is a measurement
  EXPECT_GT(c.kl, 0.0);
}

TEST(L9_Measure, LeakCandidatesOfAnInjection) {
  const Conversation c = load_conversation(test::example("ad01_banking_ut0_gpt4omini.json"));
  const std::vector<std::string> s = leak_candidates(c, c.poisoned);
  auto has = [&](const std::string& x) { return std::find(s.begin(), s.end(), x) != s.end(); };
  EXPECT_TRUE(has("US133000000121212121212"));
  EXPECT_TRUE(has("read_file"));  // the tool's name, from the tool message's header
  const auto u = leak_candidates("visit https://www.example.com/x, mail eve@evil.io or call 1234567; run read_file.");
  EXPECT_EQ(u, (std::vector<std::string>{"https://www.example.com/x", "eve@evil.io", "1234567", "read_file"}));
  EXPECT_EQ(found_in(u, "please read_file now"), std::vector<std::string>{"read_file"});
}

TEST(L5_ExactLeaksNothing, MeasuredOnEveryPoisonedBundledConversation) {
  size_t measured = 0;
  for (const std::string& f : test::bundled_conversations()) {
    if (load_conversation(test::example(f)).poisoned.empty()) continue;
    const LeakageReport r = measure(f, "cpu", 4, measured == 0);  // the cost rows once
    ++measured;
    const PolicyResult& e = of(r, EvictPolicy::kExact);
    EXPECT_TRUE(e.logits_identical) << f;
    EXPECT_EQ(e.max_abs, 0.0f) << f;
    EXPECT_EQ(e.kl, 0.0) << f;
    EXPECT_TRUE(e.top1_agree);
    EXPECT_EQ(e.rank_of_never_top, 0u);
    EXPECT_EQ(e.first_diff, -1) << f;
    EXPECT_EQ(e.continuation, r.never_continuation);
    EXPECT_EQ(e.found, r.never_found);
    for (const PolicyResult& p : r.policies) EXPECT_TRUE(p.prefix_untouched) << f << " " << policy_name(p.policy);  // L8
    EXPECT_TRUE(r.exact_ok());
    EXPECT_EQ(r.costs.size(), measured == 1 ? 12u : 0u);
  }
  EXPECT_GE(measured, 8u);
}

TEST(L7_ApproximationsAreNotExact, MeasuredOnTinyAndSmallOnEveryBackend) {
  for (const char* backend : {"reference", "cpu", "cuda-emu"}) {
    const LeakageReport r = measure("ia01_dh_base_gmail_read_email.json", backend, 4, false);  // span 2 of 4
    EXPECT_GT(of(r, EvictPolicy::kKShift).max_abs, 0.0f) << backend;
    EXPECT_GT(of(r, EvictPolicy::kMask).max_abs, 0.0f) << backend;
    EXPECT_GT(of(r, EvictPolicy::kKeep).max_abs, 0.0f) << backend;  // E2's control
    EXPECT_GT(of(r, EvictPolicy::kKShift).kl, 0.0) << backend;
    EXPECT_EQ(of(r, EvictPolicy::kExact).max_abs, 0.0f) << backend;
  }
  LeakageOptions opt;
  opt.model = "small";
  opt.continuation = 2;
  opt.positions = false;
  const std::string f = test::example("ia01_dh_base_gmail_read_email.json");  // span 2 of 4: interior
  const LeakageReport s = run_leakage(load_conversation(f), f, opt);
  EXPECT_GT(of(s, EvictPolicy::kKShift).max_abs, 0.0f);
  EXPECT_GT(of(s, EvictPolicy::kMask).max_abs, 0.0f);
  EXPECT_EQ(of(s, EvictPolicy::kExact).max_abs, 0.0f);
}

TEST(L9_LeakageCli, WritesTablesJsonAndSvg) {
  const std::string dir = ::testing::TempDir() + "akv_leakage_out_" + std::to_string(::getpid());
  fs::remove_all(dir);
  const auto r = test::run_akv({"leakage", test::example("ja01_banking_bill_important_instructions.json"),
                                test::example("ja03_clean_banking_march_spending.json"), "--model", "tiny", "--tokens", "4",
                                "--out", dir});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("| exact |"), std::string::npos);
  EXPECT_NE(r.err.find("[1/1]"), std::string::npos);  // one progress line per measured conversation
  EXPECT_NE(r.err.find("skipping"), std::string::npos);  // the clean one, said out loud
  EXPECT_EQ(test::slurp(dir + "/leakage.md"), r.out);
  const auto j = nlohmann::json::parse(test::slurp(dir + "/leakage.json"));
  EXPECT_TRUE(j["exact_ok"].get<bool>());
  ASSERT_EQ(j["reports"].size(), 1u);
  EXPECT_EQ(j["reports"][0]["policies"].size(), 4u);
  EXPECT_NE(test::slurp(dir + "/leakage.svg").find("<svg"), std::string::npos);
  fs::remove_all(dir);
}

TEST(L9_LeakageCli, BadInputIsOneLineExit2AndWritesNothing) {
  const std::string dir = ::testing::TempDir() + "akv_leakage_bad_" + std::to_string(::getpid());
  fs::remove_all(dir);
  const std::string ja01 = test::example("ja01_banking_bill_important_instructions.json");
  const std::vector<std::vector<std::string>> bad = {
      {"leakage", ja01, "--model", "tiny", "--policies", "exact,lru", "--out", dir},
      {"leakage", ja01, "--model", "tiny", "--policies", "mask,mask", "--out", dir},
      {"leakage", ja01, "--model", "tiny", "--policies", "", "--out", dir},
      {"leakage", ja01, "--model", "tiny", "--tokens", "0", "--out", dir},
      {"leakage", ja01, "--model", "tiny", "--evict", "9", "--out", dir},
      {"leakage", ja01, "--model", "nope", "--out", dir},
      {"leakage", test::example("ja03_clean_banking_march_spending.json"), "--model", "tiny", "--out", dir},
      {"leakage", "/nonexistent.json", "--model", "tiny", "--out", dir},
  };
  for (const auto& args : bad) {
    const auto r = test::run_akv(args);
    EXPECT_EQ(r.code, 2) << args[5] << ": " << r.err;
    EXPECT_EQ(r.out, "") << args[5];
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_EQ(r.err.back(), '\n');
  }
  EXPECT_FALSE(fs::exists(dir + "/leakage.md"));
  fs::remove_all(dir);
}

// L10: a secret is searched for in every continuation and named by number, never by its text.
TEST(L10_Secret, FoundInTheContinuationsAndNamedByNumber) {
  const std::string f = test::example("ja01_banking_bill_important_instructions.json");
  LeakageOptions opt = tiny_leakage(64);
  const LeakageReport plain = run_leakage(load_conversation(f), f, opt);
  // A "secret" the replies do repeat (three printable characters of never's own continuation:
  // the tiny model's replies are random bytes) and one they do not.
  const std::string& t = plain.never_continuation_text;
  size_t at = 0;
  while (at + 3 <= t.size() && !(std::isalnum(static_cast<unsigned char>(t[at])) && std::isalnum(static_cast<unsigned char>(t[at + 1])) &&
                                 std::isalnum(static_cast<unsigned char>(t[at + 2]))))
    ++at;
  ASSERT_LE(at + 3, t.size()) << "no three letters or digits in a row in: " << t;
  const std::string said = t.substr(at, 3), unsaid = "sk-never-said-0000";
  opt.secrets = {unsaid, said};
  const LeakageReport r = run_leakage(load_conversation(f), f, opt);
  EXPECT_EQ(r.secrets, 2u);
  EXPECT_EQ(r.never_secrets_found, std::vector<size_t>{2});
  EXPECT_EQ(of(r, EvictPolicy::kExact).secrets_found, std::vector<size_t>{2}) << "exact == never (L5)";
  EXPECT_EQ(r.never_continuation_text.find(said), std::string::npos) << r.never_continuation_text;
  EXPECT_NE(r.never_continuation_text.find("[secret 2]"), std::string::npos) << r.never_continuation_text;
  const std::string md = to_markdown({r}), j = to_json(r).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  EXPECT_NE(md.find("**secret 2**"), std::string::npos) << md;
  EXPECT_EQ(md.find("secret 1"), std::string::npos) << "a secret no reply repeats is not listed";
  EXPECT_EQ(j.find(unsaid), std::string::npos);
  opt.secrets = {""};
  EXPECT_THROW(run_leakage(load_conversation(f), f, opt), Error);
  const auto cli = test::run_akv({"leakage", f, "--model", "tiny", "--tokens", "64", "--no-positions", "--secret", said});
  EXPECT_EQ(cli.code, 0) << cli.err;
  EXPECT_NE(cli.out.find("**secret 1**"), std::string::npos) << cli.out;
}

// L9: the SVG names what it measured (model, its hash or seed, akv's version), labels each
// bar with its value and is as wide as its title.
TEST(L9_LeakageCli, TheSvgNamesTheModelAndVersionAndLabelsTheBars) {
  const std::string f = test::example("ja01_banking_bill_important_instructions.json");
  const LeakageReport r = run_leakage(load_conversation(f), f, tiny_leakage(4));
  const std::string svg = kl_svg({r});
  EXPECT_NE(svg.find("model tiny (synthetic, seed 1), akv 0."), std::string::npos) << svg;
  const std::string kl = fmt::format(">{:.3g}</text>", of(r, EvictPolicy::kKeep).kl);
  EXPECT_NE(svg.find(kl), std::string::npos) << "keep's bar carries its value " << kl << "\n" << svg;
  const size_t w = svg.find("width=\"");
  ASSERT_NE(w, std::string::npos);
  const std::string title = "KL(never-shown || policy) of the next-token distribution after the reply prompt";
  EXPECT_GE(std::stod(svg.substr(w + 7)), 20 + title.size() * 14 * 0.62) << "the title fits";
}
