// spec/bounds.md B0: akv::exp's measured error. The exhaustive run is `akv_exp_error`
// (docs/bounds.md); here a sample of every 65537-th bit pattern and the window around the
// exhaustive maximum.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <utility>

#include "verify/bounds/exp_error.hpp"

using namespace akv::bounds;

TEST(B0_ExpError, SampledPatternsWithinBound) {
  const ExpScan s = scan_exp_error(0, 0x100000000ull, 65537);
  EXPECT_GT(s.inputs, 60000u);
  EXPECT_LE(s.max_ulp + 0x1p-27, kExpUlp) << "at x = " << s.where;
  EXPECT_LE(exp_ulp_error_mpfr(s.where), kExpUlp);
}

TEST(B0_ExpError, WindowsAroundExhaustiveMaxima) {
  // The exhaustive maxima (spec/bounds.md B0): over x <= 0 and over x > 0. Each is where the
  // spec says, and every input within 2^16 patterns of it is within the bound (2000 of them
  // against MPFR).
  for (const auto& [worst, ulp] : {std::pair{-0x1.79082cp+2f, 0.937081}, std::pair{0x1.ab05d2p+4f, 0.938605}}) {
    EXPECT_NEAR(exp_ulp_error_mpfr(worst), ulp, 1e-6);
    uint32_t b;
    std::memcpy(&b, &worst, sizeof b);
    double max_ulp = 0;
    for (uint32_t p = b - 1000; p < b + 1000; ++p) {
      float x;
      std::memcpy(&x, &p, sizeof x);
      max_ulp = std::max(max_ulp, exp_ulp_error_mpfr(x));
    }
    EXPECT_LE(max_ulp, kExpUlp);
    const ExpScan w = scan_exp_error(b - 65536, static_cast<uint64_t>(b) + 65536, 1);
    EXPECT_LE(w.max_ulp + 0x1p-27, kExpUlp);
  }
}

TEST(B0_ExpError, FastOracleAgreesWithMpfr) {
  for (uint64_t p = 0; p < 0x100000000ull; p += 40000003) {
    uint32_t b = static_cast<uint32_t>(p);
    float x;
    std::memcpy(&x, &b, sizeof x);
    const double a = exp_ulp_error_fast(x), m = exp_ulp_error_mpfr(x);
    if (std::isinf(a) || std::isinf(m)) {
      EXPECT_EQ(a, m) << x;
    } else {
      EXPECT_LE(std::fabs(a - m), 0x1p-27) << x;
    }
  }
}
