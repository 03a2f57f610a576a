#include "verify/bounds/exp_error.hpp"

#include <mpfr.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "reference/exp.hpp"

namespace akv::bounds {

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
// e^x rounds to +inf in binary32 iff e^x >= 2^128 (1 - 2^-25) iff x > this (ln of it,
// 88.72283911167...); the nearest doubles either side are told apart by the MPFR path.
float from_bits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}
double ulp_of(double y) {  // y > 0, the float ulp at y
  const int e = std::max(std::ilogb(y), -126);
  return std::ldexp(1.0, e - 23);
}
}  // namespace

double exp_ulp_error_mpfr(float x) {
  const float v = akv::exp(x);
  if (std::isnan(x)) return std::isnan(v) ? 0.0 : kInf;
  mpfr_t y, t, th;
  mpfr_inits2(128, y, t, th, static_cast<mpfr_ptr>(nullptr));
  mpfr_set_flt(y, x, MPFR_RNDN);
  mpfr_exp(y, y, MPFR_RNDN);
  // Overflow threshold 2^128 (1 - 2^-25).
  mpfr_set_ui_2exp(th, 1, 128, MPFR_RNDN);
  mpfr_set_ui_2exp(t, 1, 103, MPFR_RNDN);
  mpfr_sub(th, th, t, MPFR_RNDN);
  double err;
  if (mpfr_cmp(y, th) >= 0) {
    err = std::isinf(v) ? 0.0 : kInf;
  } else if (std::isinf(v)) {
    err = kInf;
  } else {
    // ulp of the exact value, from its binary exponent.
    const long e = std::max(mpfr_get_exp(y) - 1, -126L);  // y in [2^(exp-1), 2^exp)
    mpfr_set_flt(t, v, MPFR_RNDN);
    mpfr_sub(t, t, y, MPFR_RNDN);
    mpfr_abs(t, t, MPFR_RNDN);
    mpfr_mul_2si(t, t, -(e - 23), MPFR_RNDN);
    err = mpfr_get_d(t, MPFR_RNDU);
  }
  mpfr_clears(y, t, th, static_cast<mpfr_ptr>(nullptr));
  return err;
}

double exp_ulp_error_fast(float x) {
  const float v = akv::exp(x);
  if (std::isnan(x)) return std::isnan(v) ? 0.0 : kInf;
  const double y = std::exp(static_cast<double>(x));
  constexpr double kOverflow = 0x1p128 * (1 - 0x1p-25);
  if (y >= kOverflow) return std::isinf(v) ? 0.0 : kInf;
  if (std::isinf(v)) return kInf;
  if (y == 0) return v == 0 ? 0.0 : kInf;  // x < -745: e^x < 2^-1075, 0 is exact enough
  return std::fabs(static_cast<double>(v) - y) / ulp_of(y);
}

ExpScan scan_exp_error(uint64_t first, uint64_t last, uint64_t step) {
  ExpScan s;
  for (uint64_t b = first; b < last; b += step) {
    const float x = from_bits(static_cast<uint32_t>(b));
    if (std::isnan(x)) {
      if (!std::isnan(akv::exp(x))) {
        s.max_ulp = kInf;
        s.where = x;
      }
      continue;
    }
    const double e = exp_ulp_error_fast(x);
    ++s.inputs;
    if (e > 0.5) ++s.over_half;
    if (e > s.max_ulp) {
      s.max_ulp = e;
      s.where = x;
    }
  }
  return s;
}

}  // namespace akv::bounds
