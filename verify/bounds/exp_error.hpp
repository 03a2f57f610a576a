// The measured error of akv::exp (spec/bounds.md B0; the algorithm is spec/arithmetic.md A4).
#pragma once
#include <cstdint>

namespace akv::bounds {

/// Upper bound of akv::exp's error in ulps of the exact result, over every float32 input:
/// |akv::exp(x) - e^x| <= kExpUlp * ulp(e^x), ulp(y) = 2^(max(floor(log2 y), -126) - 23).
/// Measured exhaustively by `akv_exp_error` (max 0.938605 ulp at x = 0x1.ab05d2p+4; over
/// x <= 0, 0.937081 ulp at x = -0x1.79082cp+2; spec/bounds.md B0) and rounded up; the sampled test B0_ExpError re-checks it in CI.
inline constexpr double kExpUlp = 0.94;

/// The same bound in the form the other bounds use: for finite akv::exp(x) = v,
/// |v - e^x| <= kExpRel * e^x + kExpAbs (normal results: ulp(y) <= 2^-23 y; subnormal:
/// ulp = 2^-149).
inline constexpr double kExpRel = kExpUlp * 0x1p-23;
inline constexpr double kExpAbs = kExpUlp * 0x1p-149;

/// Error of akv::exp(x) in ulps of e^x, computed with MPFR at 128 bits (exact to the digits
/// printed). 0 when both are +inf, +0 or NaN; +inf when only one side overflows.
double exp_ulp_error_mpfr(float x);

/// The same against libm's double exp (under 1 double ulp off): faster, and within
/// 2^-28 float ulps of exp_ulp_error_mpfr. Used by the exhaustive scan to find the maximum.
double exp_ulp_error_fast(float x);

/// Result of scanning float bit patterns.
struct ExpScan {
  double max_ulp = 0;      // max exp_ulp_error_fast over the scanned inputs
  float where = 0;         // an input attaining it
  uint64_t inputs = 0;     // inputs scanned
  uint64_t over_half = 0;  // inputs whose result is not correctly rounded (error > 0.5 ulp)
};

/// Scans the bit patterns b = first, first + step, ... < last (sign bit included: patterns
/// >= 0x80000000 are negative). NaN patterns are checked to give NaN and not counted.
ExpScan scan_exp_error(uint64_t first, uint64_t last, uint64_t step);

}  // namespace akv::bounds
