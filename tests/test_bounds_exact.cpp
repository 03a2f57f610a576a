// spec/bounds.md B12 (the MPFR oracle) and B13 (integer-valued inputs: exact in any order).
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cmath>
#include <vector>

#include "bounds_support.hpp"
#include "reference/ops.hpp"
#include "verify/oracle/exact_sum.hpp"
#include "verify/oracle/real.hpp"

using namespace akv;
using akv::oracle::Real;

TEST(B12_Oracle, PrecisionAndCorrectlyRoundedFunctions) {
  EXPECT_GE(oracle::oracle_bits(), 200);
  // exp, sqrt, / through Boost are MPFR's: compare with MPFR called directly at the same precision.
  mpfr_t r;
  mpfr_init2(r, oracle::oracle_bits());
  mpfr_set_d(r, -3.25, MPFR_RNDN);
  mpfr_exp(r, r, MPFR_RNDN);
  EXPECT_EQ(mpfr_cmp(r, ScalarOps<Real>::exp(Real(-3.25f)).backend().data()), 0);
  mpfr_set_ui(r, 2, MPFR_RNDN);
  mpfr_sqrt(r, r, MPFR_RNDN);
  EXPECT_EQ(mpfr_cmp(r, ScalarOps<Real>::sqrt(Real(2.0f)).backend().data()), 0);
  mpfr_set_ui(r, 1, MPFR_RNDN);
  mpfr_div_ui(r, r, 3, MPFR_RNDN);
  EXPECT_EQ(mpfr_cmp(r, (Real(1) / Real(3)).backend().data()), 0);
  mpfr_clear(r);
}

TEST(B12_Oracle, DotProductsAreExactAtThisPrecision) {
  // Products of floats within 2^±40 and their sums of 64 terms need < 24+24+80+6 bits.
  std::vector<float> x(64), y(64);
  for (int i = 0; i < 64; ++i) {
    x[i] = std::ldexp(1.0f + i / 64.0f, (i * 7) % 81 - 40);
    y[i] = std::ldexp(-1.0f + i / 128.0f, (i * 5) % 81 - 40);
  }
  Real s = 0;
  for (int i = 0; i < 64; ++i) s += Real(x[i]) * Real(y[i]);
  const float f = oracle::dot_rounded(x, y);
  EXPECT_EQ(oracle::abs_err_up(f, s), oracle::dot_abs_err_up(f, x, y));
}

namespace {
// n values of `bits` significant bits, scaled by 2^scale: every product has <= 2 bits bits,
// every partial sum of n of them <= 2 bits + log2 n bits, exact in binary32 when <= 24.
std::vector<float> few_bit(int n, int bits, int scale) {
  std::vector<float> v(n);
  for (auto& x : v) x = std::ldexp(static_cast<float>(*rc::gen::inRange(-(1 << bits) + 1, 1 << bits)), scale);
  return v;
}
}  // namespace

RC_GTEST_PROP(B13_IntegerValuedInputs, EveryOrderIsBitwiseExact, ()) {
  const int n = *rc::gen::inRange(1, 1025);  // 2 * 7 + 10 = 24 bits
  const int scale = *rc::gen::inRange(-60, 40);
  const auto x = few_bit(n, 7, scale), y = few_bit(n, 7, -scale / 2);
  const float exact = oracle::dot_rounded(x, y);
  RC_ASSERT(oracle::dot_abs_err_up(exact, x, y) == 0.0);  // the exact sum is a float
  float ref_out;
  ref::matmul(&ref_out, x.data(), y.data(), n, 1);
  const float alt = test::dot_pairwise_fma(x.data(), 1, y.data(), 1, n);
  RC_ASSERT(std::memcmp(&ref_out, &exact, sizeof exact) == 0 || (ref_out == 0 && exact == 0));
  RC_ASSERT(std::memcmp(&alt, &exact, sizeof exact) == 0 || (alt == 0 && exact == 0));
}

TEST(B13_IntegerValuedInputs, PlantedCornerCatchesWrongIndexing) {
  // A matmul with one non-zero corner per row: a kernel reading the wrong element gives a
  // different exact integer, so bitwise comparison catches it where a bound might not.
  const int n = 96, d = 5;
  std::vector<float> W(static_cast<size_t>(n) * d, 1.0f), x(n);
  for (int j = 0; j < n; ++j) x[j] = static_cast<float>(j - 40);
  for (int i = 0; i < d; ++i) W[static_cast<size_t>(i) * n + (n - 1 - i)] = 1000.0f;
  std::vector<float> out(d);
  ref::matmul(out.data(), x.data(), W.data(), n, d);
  for (int i = 0; i < d; ++i) {
    const float e = oracle::dot_rounded(W.data() + static_cast<size_t>(i) * n, 1, x.data(), 1, n);
    EXPECT_EQ(std::memcmp(&out[i], &e, sizeof e), 0) << i;
    EXPECT_EQ(e, static_cast<float>((n * (n - 1)) / 2 - 40 * n + 999 * (n - 1 - i - 40)));
  }
}
