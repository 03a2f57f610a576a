// Outward-rounded double arithmetic for computing error bounds (spec/bounds.md B0-B10).
// Every bound akv states is evaluated with these: each result is nudged one double ulp away
// from the true value, so a bound computed in double is never smaller than the real-number
// formula it evaluates (round-to-nearest double errs by at most half an ulp).
#pragma once
#include <cmath>
#include <limits>

namespace akv::bounds {

/// Unit roundoff of binary32, u = 2^-24 (Higham, Accuracy and Stability, 2nd ed., §2.1).
inline constexpr double kU = 0x1p-24;
/// Half the smallest subnormal binary32: the absolute error of one rounding into underflow.
inline constexpr double kEta = 0x1p-150;

/// A double >= x (x a double already computed with error <= half an ulp).
inline double up(double x) { return std::nextafter(x, std::numeric_limits<double>::infinity()); }
/// A double <= x.
inline double down(double x) { return std::nextafter(x, -std::numeric_limits<double>::infinity()); }

/// Upper bounds of a+b, a*b, a/b and lower bounds, for a, b >= 0.
inline double add_up(double a, double b) { return up(a + b); }
inline double mul_up(double a, double b) { return up(a * b); }
inline double div_up(double a, double b) { return b <= 0 ? std::numeric_limits<double>::infinity() : up(a / b); }
inline double add_dn(double a, double b) { return std::fmax(0.0, down(a + b)); }
inline double mul_dn(double a, double b) { return std::fmax(0.0, down(a * b)); }
inline double div_dn(double a, double b) { return std::fmax(0.0, down(a / b)); }
inline double sub_dn(double a, double b) { return down(a - b); }
inline double sub_up(double a, double b) { return up(a - b); }
inline double sqrt_up(double a) { return up(std::sqrt(a)); }  // IEEE sqrt: correctly rounded
inline double sqrt_dn(double a) { return std::fmax(0.0, down(std::sqrt(a))); }

/// Upper / lower bounds of e^x from libm's exp, widened by 2^-40 relative (glibc's exp errs by
/// under 1 ulp = 2^-52; the margin covers it with room).
inline double exp_up(double x) { return up(std::exp(x) * (1 + 0x1p-40)); }
inline double exp_dn(double x) { return std::fmax(0.0, down(std::exp(x) * (1 - 0x1p-40))); }

/// Upper bound of e^t - 1 for t >= 0: t + t^2 for t <= 1 (e^t - 1 - t <= t^2 (e - 2) there),
/// else from exp_up.
inline double expm1_up(double t) {
  if (t <= 1.0) return add_up(t, mul_up(t, t));
  return up(exp_up(t) - 1.0);
}

/// gamma_n = n u / (1 - n u) (Higham, Lemma 3.1), rounded up; +inf when n u >= 1/2 (the
/// bounds assume n u < 1/2 so that 1 + gamma_n <= 2).
inline double gamma(double n) {
  const double nu = n * kU;  // exact: n < 2^29
  if (nu >= 0.5) return std::numeric_limits<double>::infinity();
  return div_up(nu, down(1.0 - nu));
}

/// gamma_n of double arithmetic (unit roundoff 2^-53), rounded up: for error bounds on the
/// double computations the bounds themselves make (centres, scores, sums).
inline double gamma53(double n) {
  const double nu = n * 0x1p-53;
  return div_up(nu, down(1.0 - nu));
}

/// (1 + u)^k - 1 rounded up, k small (the growth of k roundings of one value), as
/// r_i = r_{i-1} (1 + u) + u: no subtraction of 1, so it stays within a few ulps of the formula.
inline double rel_k(int k) {
  double r = 0.0;
  for (int i = 0; i < k; ++i) r = add_up(add_up(r, mul_up(r, kU)), kU);
  return r;
}

}  // namespace akv::bounds
