// spec/bounds.md B11: the enclosure's op rules against the MPFR oracle, and end to end on
// the tiny model: the enclosure runs the float reference's bits and bounds every logit.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <sys/wait.h>
#include <vector>

#include "reference/ops.hpp"
#include "support.hpp"
#include "verify/bounds/end_to_end.hpp"
#include "verify/bounds/enclosure.hpp"
#include "verify/oracle/real.hpp"

using namespace akv;
using namespace akv::bounds;
using akv::oracle::Real;

namespace {
// An enclosed input: float value v, bound e, and an exact value within e of v.
struct Input {
  Enc enc;
  Real exact;
};
Input gen_input(double lo_mag, double hi_mag) {
  const double mag = lo_mag + (hi_mag - lo_mag) * *rc::gen::inRange(0, 1001) / 1000.0;
  const float v = static_cast<float>(*rc::gen::element(-1.0, 1.0) * mag);
  const double e = std::fabs(v) * std::ldexp(1.0, *rc::gen::inRange(-24, -4)) * *rc::gen::element(0.0, 1.0);
  const double t = *rc::gen::inRange(-1000, 1001) / 1000.0;  // where in [v - e, v + e]
  return {Enc(v, e), Real(v) + Real(t) * Real(e)};
}
bool within(const Enc& r, const Real& exact) { return oracle::abs_err_up(r.v, exact) <= r.e * (1 + 0x1p-200); }
}  // namespace

RC_GTEST_PROP(B11_EnclosureRules, ArithmeticIsSound, ()) {
  const Input a = gen_input(1e-3, 1e3), b = gen_input(1e-3, 1e3);
  RC_ASSERT(within(a.enc + b.enc, a.exact + b.exact));
  RC_ASSERT(within(a.enc - b.enc, a.exact - b.exact));
  RC_ASSERT(within(a.enc * b.enc, a.exact * b.exact));
  RC_ASSERT(within(a.enc / b.enc, a.exact / b.exact));
  RC_ASSERT(within(ScalarOps<Enc>::max(a.enc, b.enc), a.exact < b.exact ? b.exact : a.exact));
}

RC_GTEST_PROP(B11_EnclosureRules, ExpSqrtSiluAreSound, ()) {
  const Input a = gen_input(0, 80);
  RC_ASSERT(within(ScalarOps<Enc>::exp(a.enc), boost::multiprecision::exp(a.exact)));
  RC_ASSERT(within(silu(a.enc), a.exact / (1 + boost::multiprecision::exp(-a.exact))));
  const Input p = gen_input(1e-6, 1e6);
  const Enc pa(std::fabs(p.enc.v), p.enc.e);
  RC_ASSERT(within(ScalarOps<Enc>::sqrt(pa), boost::multiprecision::sqrt(boost::multiprecision::abs(p.exact))));
}

RC_GTEST_PROP(B11_EnclosureRules, SoftmaxIsSound, ()) {
  const int n = *rc::gen::inRange(1, 40);
  std::vector<Enc> x(n);
  std::vector<Real> xr(n);
  for (int j = 0; j < n; ++j) {
    const Input in = gen_input(0, 20);
    x[j] = in.enc;
    xr[j] = in.exact;
  }
  softmax(x.data(), n);
  ref::softmax(xr.data(), n);
  for (int j = 0; j < n; ++j) RC_ASSERT(within(x[j], xr[j]));
}

TEST(B11_EndToEnd, TinySingleTokenFiniteAndSound) {
  for (Token t : {0, 65, 256, 287}) {
    const std::vector<Token> tokens = {t};
    const BoundsReport r = run_bounds(test::tiny(), 1, tokens);
    EXPECT_TRUE(r.enclosure_bitwise);
    EXPECT_EQ(r.violations, 0u);
    EXPECT_TRUE(std::isfinite(r.max_bound)) << t;
    EXPECT_GT(r.max_error, 0.0);  // a real comparison, not 0 vs 0
  }
}

RC_GTEST_PROP(B11_EndToEnd, TinySequencesSound, ()) {
  const auto tokens = *rc::gen::container<std::vector<Token>>(*rc::gen::inRange<size_t>(1, 12), rc::gen::inRange(0, 288));
  const BoundsReport r = run_bounds(test::tiny(), 1, tokens);
  RC_ASSERT(r.enclosure_bitwise);
  RC_ASSERT(r.violations == 0u);
}

TEST(B11_EndToEnd, ConversationPrefixMatchesSession) {
  // The float values the report shows are the Session's own next-token logits.
  const auto spans = test::spans_of("ad01_banking_ut0_gpt4omini.json");
  std::vector<Token> tokens(spans[0].begin(), spans[0].begin() + 24);
  const BoundsReport r = run_bounds(test::tiny(), 1, tokens);
  auto backend = make_reference_backend(test::tiny());
  Session s(*backend);
  s.append(0, tokens);
  const std::span<const float> l = s.logits();
  ASSERT_EQ(l.size(), r.logits.size());
  for (size_t i = 0; i < l.size(); ++i) EXPECT_EQ(std::memcmp(&l[i], &r.logits[i].value, sizeof(float)), 0) << i;
  EXPECT_EQ(r.violations, 0u);
}

TEST(B11_BoundsCommand, ExitCodes) {
  auto run = [](const std::string& args) {
    const int s = std::system((std::string(AKV_CLI) + " bounds " + args + " > /dev/null 2>&1").c_str());
    return WEXITSTATUS(s);
  };
  const std::string conv = test::example("ad01_banking_ut0_gpt4omini.json");
  EXPECT_EQ(run(conv + " --max-tokens 1 --json"), 0);
  EXPECT_EQ(run(conv + " --max-tokens 1 --model huge"), 2);
  EXPECT_EQ(run(test::source_dir() + "/no/such/file.json"), 2);
}
