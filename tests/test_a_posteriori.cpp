// B17: the a-posteriori enclosure. The reference template on MPFI intervals encloses the exact
// logits; each backend's logits are certified within a computed distance of them.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "cli_support.hpp"
#include "reference/error.hpp"
#include "support.hpp"
#include "runtime/backends.hpp"
#include "verify/bounds/a_posteriori.hpp"
#include "verify/check/models.hpp"
#include "verify/check/run.hpp"
#include "verify/oracle/interval.hpp"
#include "verify/oracle/oracle_forward.hpp"

using namespace akv;

namespace {

// |x - y| rounded up, x an interval end or midpoint, y the oracle's value.
double dist_up(const oracle::Real& a, const oracle::Real& b) {
  const oracle::Real d = abs(a - b);
  return mpfr_get_d(d.backend().data(), MPFR_RNDU);
}

oracle::Real lower(const oracle::Interval& x) {
  oracle::Real r;
  mpfi_get_left(r.backend().data(), x.backend().data());
  return r;
}

oracle::Real upper(const oracle::Interval& x) {
  oracle::Real r;
  mpfi_get_right(r.backend().data(), x.backend().data());
  return r;
}

}  // namespace

TEST(B17_APosteriori, TheIntervalsHoldTheMpfrOracleOnTiny) {
  // The oracle (B12) is the same computation rounded to nearest at 267 bits: within the
  // interval up to B12's slack of 2^-200 relative, and the intervals are narrow.
  const auto m = check::tiny_model();
  for (uint32_t seed : {1u, 2u}) {
    const auto toks = check::tokens(seed == 1 ? 1 : 20, seed, m->config.vocab);
    const std::vector<oracle::Interval> enc = oracle::interval_logits(*m, toks);
    const std::vector<oracle::Real> ora = oracle::oracle_logits(*m, toks);
    ASSERT_EQ(enc.size(), ora.size());
    for (size_t i = 0; i < enc.size(); ++i) {
      const oracle::Real lo = lower(enc[i]), hi = upper(enc[i]);
      const oracle::Real slack = abs(ora[i]) * pow(oracle::Real(2), -200);
      EXPECT_LE(lo - slack, ora[i]) << i;
      EXPECT_LE(ora[i], hi + slack) << i;
      EXPECT_LT(dist_up(hi, lo), bounds::kEnclosureWidthLimit) << i;
    }
  }
}

TEST(B17_APosteriori, EachBackendIsCertifiedToItsOwnErrorOnSmall) {
  const auto m = check::small_model();
  const auto toks = check::tokens(6, 4, m->config.vocab);
  const bounds::PosterioriReport r = bounds::run_a_posteriori(m, toks, backend_names(), "small");
  ASSERT_TRUE(r.sound()) << bounds::to_text(r);
  EXPECT_EQ(r.verdict(), "SOUND");
  EXPECT_GE(r.bits, 267);
  EXPECT_EQ(r.logits.size(), static_cast<size_t>(m->config.vocab));
  EXPECT_LT(r.max_width, bounds::kEnclosureWidthLimit);
  const std::vector<oracle::Real> ora = oracle::oracle_logits(*m, toks);
  for (size_t k = 0; k < r.backends.size(); ++k) {
    const bounds::PosterioriBackend& b = r.backends[k];
    EXPECT_GT(b.max_observed, 0.0) << b.name << ": no backend is exact at every logit";
    EXPECT_LE(b.median_ratio, 1e4) << b.name;
    for (size_t i = 0; i < r.logits.size(); ++i) {
      const bounds::EnclosedLogit& L = r.logits[i];
      // The certificate holds against the oracle, and is no looser than the error against
      // the oracle plus the enclosure's width (and the doubles' own rounding, 2^-50 relative).
      const double err = dist_up(oracle::Real(L.values[k]), ora[i]);
      EXPECT_LE(err, L.certified[k] * (1 + 0x1p-50)) << b.name << " logit " << i;
      EXPECT_LE(L.certified[k], err * (1 + 0x1p-50) + L.width + 0x1p-50 * std::fabs(L.exact)) << b.name << " logit " << i;
    }
  }
}

TEST(B17_APosteriori, TooFewBitsIsWideAndNamesTheBitsThatDo) {
  const auto m = check::small_model();
  const auto toks = check::tokens(2, 4, m->config.vocab);
  const bounds::PosterioriReport few = bounds::run_a_posteriori(m, toks, {"reference"}, "small", 64);
  EXPECT_FALSE(few.sound());
  EXPECT_EQ(few.verdict(), "WIDE");
  EXPECT_GT(few.wide, 0u);
  ASSERT_GT(few.bits_needed, few.bits);
  EXPECT_NE(bounds::to_text(few).find("rerun with --bits " + std::to_string(few.bits_needed)), std::string::npos);
  const bounds::PosterioriReport enough = bounds::run_a_posteriori(m, toks, {"reference"}, "small", few.bits_needed);
  EXPECT_TRUE(enough.sound()) << bounds::to_text(enough);
}

TEST(B17_APosteriori, NothingRunOrANonFiniteLogitIsNotSound) {
  bounds::PosterioriReport r;
  EXPECT_FALSE(r.sound());  // no logits, no backend
  r.logits.resize(3);
  EXPECT_FALSE(r.sound());
  r.backends.push_back({"cpu"});
  EXPECT_TRUE(r.sound());
  r.backends[0].non_finite = 1;
  EXPECT_FALSE(r.sound());
  EXPECT_EQ(r.verdict(), "VIOLATED");
  const auto m = check::tiny_model();
  EXPECT_THROW(bounds::run_a_posteriori(m, std::vector<Token>{}, {"reference"}, "tiny"), Error);
  EXPECT_THROW(bounds::run_a_posteriori(m, std::vector<Token>{m->config.vocab}, {"reference"}, "tiny"), Error);
}

TEST(B17_APosteriori, TheCli) {
  const std::string f = test::example("ad01_banking_ut0_gpt4omini.json");
  const test::CliRun r = test::run_akv({"bounds", f, "--a-posteriori", "--model", "tiny", "--max-tokens", "12", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["verdict"], "SOUND");
  EXPECT_EQ(j["kind"], "a-posteriori");
  EXPECT_EQ(j["logits"].size(), 288u);
  const test::CliRun wide =
      test::run_akv({"bounds", f, "--a-posteriori", "--model", "small", "--max-tokens", "4", "--bits", "64"});
  EXPECT_EQ(wide.code, 1) << wide.err;
  EXPECT_NE(wide.out.find("WIDE:"), std::string::npos) << wide.out;
  EXPECT_EQ(test::run_akv({"bounds", f, "--bits", "300"}).code, 2);
  EXPECT_EQ(test::run_akv({"bounds", f, "--a-posteriori", "--per-op"}).code, 2);
  EXPECT_EQ(test::run_akv({"bounds", f, "--a-posteriori", "--bits", "63"}).code, 2);
}
