// The numbers the bound functions compute are the numbers the theorems state (spec/bounds.md
// B1, B2, B3, B4, B6; docs/proofs.md). tests/golden/bounds_coq.txt holds inputs and, for each, the
// exact value of the theorem's right-hand side as Coq computes it (proofs/bound_values.v proves
// each computed expression equal to its theorem's; scripts/prove fails when a value in the file
// is not Coq's). Every bound function must return at least that value (its outward rounding
// never undershoots the proven formula) and at most 2^-40 above it (the same formula, not a
// looser one): a wrong gamma index or a dropped underflow term fails here.
#include <gmp.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "verify/bounds/op_bounds.hpp"

namespace {

namespace fs = std::filesystem;

struct Line {
  std::string kind;
  std::vector<std::string> args;
  std::vector<std::string> values;  // p/q, exact
};

std::vector<Line> golden() {
  const fs::path p = fs::path(AKV_SOURCE_DIR) / "tests" / "golden" / "bounds_coq.txt";
  std::ifstream in(p);
  EXPECT_TRUE(in) << "cannot read " << p;
  std::vector<Line> out;
  for (std::string raw; std::getline(in, raw);) {
    if (raw.empty() || raw[0] == '#') continue;
    const size_t eq = raw.find(" = ");
    if (eq == std::string::npos) {
      ADD_FAILURE() << "malformed golden line: " << raw;
      continue;
    }
    Line l;
    std::istringstream lhs(raw.substr(0, eq)), rhs(raw.substr(eq + 3));
    lhs >> l.kind;
    for (std::string t; lhs >> t;) l.args.push_back(t);
    for (std::string t; rhs >> t;) l.values.push_back(t);
    out.push_back(std::move(l));
  }
  return out;
}

double num(const std::string& hex) { return std::strtod(hex.c_str(), nullptr); }

// Whether exact <= code <= exact (1 + 2^-40), exactly (GMP rationals; code is a finite double).
::testing::AssertionResult is_the_theorems(double code, const std::string& exact_pq, const std::string& what) {
  if (!std::isfinite(code)) return ::testing::AssertionFailure() << what << ": the bound is " << code << ", not finite";
  mpq_t e, c, hi;
  mpq_inits(e, c, hi, nullptr);
  mpq_set_str(e, exact_pq.c_str(), 10);
  mpq_canonicalize(e);
  mpq_set_d(c, code);
  mpq_set_ui(hi, 1, 1);
  mpq_div_2exp(hi, hi, 40);
  mpz_add(mpq_numref(hi), mpq_numref(hi), mpq_denref(hi));  // 1 + 2^-40
  mpq_mul(hi, hi, e);
  const bool below = mpq_cmp(c, e) < 0, above = mpq_cmp(c, hi) > 0;
  const double ed = mpq_get_d(e);
  mpq_clears(e, c, hi, nullptr);
  if (below)
    return ::testing::AssertionFailure() << what << ": the code's bound " << code << " is below the theorem's "
                                         << ed << " (" << exact_pq << ")";
  if (above)
    return ::testing::AssertionFailure() << what << ": the code's bound " << code << " is more than 2^-40 above the theorem's "
                                         << ed << ": another formula";
  return ::testing::AssertionSuccess();
}

// For a bound whose exact value Coq encloses in [lower, upper] (B2: its square roots to 2^-80,
// so the two agree to about 2^-79): upper <= code <= upper (1 + 2^-40), and lower <= upper.
::testing::AssertionResult is_the_theorems(double code, const std::string& upper_pq, const std::string& lower_pq,
                                           const std::string& what) {
  mpq_t up, lo;
  mpq_inits(up, lo, nullptr);
  mpq_set_str(up, upper_pq.c_str(), 10);
  mpq_set_str(lo, lower_pq.c_str(), 10);
  mpq_canonicalize(up);
  mpq_canonicalize(lo);
  const bool ordered = mpq_cmp(lo, up) <= 0;
  mpq_clears(up, lo, nullptr);
  if (!ordered) return ::testing::AssertionFailure() << what << ": the golden enclosure is empty (lower > upper)";
  return is_the_theorems(code, upper_pq, what);
}

std::vector<float> floats(const std::vector<std::string>& a, size_t from, size_t n) {
  std::vector<float> out;
  for (size_t i = 0; i < n; ++i) out.push_back(static_cast<float>(num(a.at(from + i))));
  return out;
}

std::map<std::string, int> checked_per_kind() {
  std::map<std::string, int> m;
  for (const auto& l : golden()) m[l.kind] += static_cast<int>(l.values.size());
  return m;
}

}  // namespace

// B1: dot_bound_from_abs (n, S), dot_bound, weighted_sum_bound (B7), matmul_bounds and the
// abs_dot_up path of B16 on the same rows.
TEST(B1_CoqValues, DotBoundsAreTheTheoremsExpression) {
  int checked = 0;
  for (const auto& l : golden()) {
    if (l.kind == "B1") {
      const int n = std::stoi(l.args.at(0));
      const double S = num(l.args.at(1));
      EXPECT_TRUE(is_the_theorems(akv::bounds::dot_bound_from_abs(S, n), l.values.at(0), "dot_bound_from_abs(" + l.args[1] + ", " + l.args[0] + ")"));
      ++checked;
    } else if (l.kind == "B1v") {
      const int n = std::stoi(l.args.at(0));
      const auto x = floats(l.args, 1, n), y = floats(l.args, 1 + n, n);
      const std::string what = "n = " + l.args[0] + ", x0 = " + l.args[1];
      EXPECT_TRUE(is_the_theorems(akv::bounds::dot_bound(x.data(), 1, y.data(), 1, n), l.values.at(0), "dot_bound " + what));
      EXPECT_TRUE(is_the_theorems(akv::bounds::weighted_sum_bound(x.data(), y.data(), n, 1), l.values.at(0), "weighted_sum_bound " + what));
      double row = 0;
      akv::bounds::matmul_bounds(x.data(), y.data(), 1, n, 1, &row);
      EXPECT_TRUE(is_the_theorems(row, l.values.at(0), "matmul_bounds " + what));
      EXPECT_TRUE(is_the_theorems(akv::bounds::dot_bound_from_abs(akv::bounds::abs_dot_up(x.data(), y.data(), n), n),
                                  l.values.at(0), "dot_bound_from_abs(abs_dot_up) " + what));
      ++checked;
    }
  }
  EXPECT_GE(checked, 50) << "too few B1 values in tests/golden/bounds_coq.txt: the comparison checked little";
}

TEST(B3_CoqValues, RopeBoundsAreTheTheoremsExpression) {
  int checked = 0;
  for (const auto& l : golden()) {
    if (l.kind != "B3") continue;
    const std::vector<float> x = {static_cast<float>(num(l.args.at(0))), static_cast<float>(num(l.args.at(1)))};
    const float c = static_cast<float>(num(l.args.at(2))), s = static_cast<float>(num(l.args.at(3)));
    const auto b = akv::bounds::rope_bounds(x, &c, &s);
    ASSERT_EQ(b.size(), 2u);
    EXPECT_TRUE(is_the_theorems(b[0], l.values.at(0), "rope_bounds[0] x0 = " + l.args[0]));
    EXPECT_TRUE(is_the_theorems(b[1], l.values.at(1), "rope_bounds[1] x0 = " + l.args[0]));
    checked += 2;
  }
  EXPECT_GE(checked, 10);
}

TEST(B4_CoqValues, ScoreBoundIsTheTheoremsExpression) {
  int checked = 0;
  for (const auto& l : golden()) {
    if (l.kind != "B4") continue;
    const int r = std::stoi(l.args.at(0)), d = r * r;
    const auto q = floats(l.args, 1, d), k = floats(l.args, 1 + d, d);
    EXPECT_TRUE(is_the_theorems(akv::bounds::score_bound(q, k), l.values.at(0), "score_bound d = " + std::to_string(d)));
    ++checked;
  }
  EXPECT_GE(checked, 4);
}

TEST(B6_CoqValues, NormaliseBoundsAreTheTheoremsExpression) {
  int checked = 0;
  for (const auto& l : golden()) {
    if (l.kind != "B6") continue;
    const int n = std::stoi(l.args.at(0));
    const auto e = floats(l.args, 1, n);
    const auto b = akv::bounds::normalise_bounds(e);
    ASSERT_EQ(b.size(), static_cast<size_t>(n));
    for (int j = 0; j < n; ++j) {
      EXPECT_TRUE(is_the_theorems(b[j], l.values.at(j), "normalise_bounds[" + std::to_string(j) + "] n = " + l.args[0]));
      ++checked;
    }
  }
  EXPECT_GE(checked, 10);
}

TEST(B2_CoqValues, RmsnormBoundsAreTheTheoremsExpression) {
  int checked = 0;
  for (const auto& l : golden()) {
    if (l.kind != "B2") continue;
    const int n = std::stoi(l.args.at(0));
    const float eps = static_cast<float>(num(l.args.at(1)));
    const auto x = floats(l.args, 2, n), w = floats(l.args, 2 + n, n);
    const auto b = akv::bounds::rmsnorm_bounds(x, w, eps);
    ASSERT_EQ(b.size(), static_cast<size_t>(n));
    ASSERT_EQ(l.values.size(), static_cast<size_t>(2 * n));
    for (int j = 0; j < n; ++j) {
      EXPECT_TRUE(is_the_theorems(b[j], l.values.at(2 * j), l.values.at(2 * j + 1),
                                  "rmsnorm_bounds[" + std::to_string(j) + "] n = " + l.args[0]));
      ++checked;
    }
  }
  EXPECT_GE(checked, 10);
}

// The file covers every kind, and its values are exact (p/q with q a positive integer).
TEST(B1_CoqValues, TheGoldenFileCoversEveryKind) {
  const auto m = checked_per_kind();
  for (const char* k : {"B1", "B1v", "B2", "B3", "B4", "B6"}) EXPECT_GT(m.count(k) ? m.at(k) : 0, 0) << "no " << k << " values";
}
