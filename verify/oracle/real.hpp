// The exact oracle's scalar (spec/bounds.md B12): an MPFR float of kOracleBits bits through
// Boost.Multiprecision, with exp, sqrt and division correctly rounded by MPFR. The reference
// template instantiated with it computes the model's real-valued result to within
// 2^-(kOracleBits - 40) relative, far below any float32 error it is compared with.
#pragma once
#include <boost/multiprecision/mpfr.hpp>

#include "reference/scalar.hpp"

namespace akv::oracle {

/// 80 decimal digits: Boost gives 267 bits of precision (checked by B12_Oracle).
using Real = boost::multiprecision::number<
    boost::multiprecision::mpfr_float_backend<80, boost::multiprecision::allocate_stack>,
    boost::multiprecision::et_off>;

/// The oracle's precision in bits, read from MPFR.
inline long oracle_bits() { return static_cast<long>(mpfr_get_prec(Real(1).backend().data())); }

/// |f - r| rounded up to a double (MPFR's directed rounding).
inline double abs_err_up(float f, const Real& r) {
  Real d = Real(f) - r;  // rounded at kOracleBits; the caller's slack (B12) covers it
  return mpfr_get_d(abs(d).backend().data(), MPFR_RNDU);
}

/// r rounded to the nearest double.
inline double to_double(const Real& r) { return mpfr_get_d(r.backend().data(), MPFR_RNDN); }

}  // namespace akv::oracle

namespace akv {

template <>
struct ScalarOps<oracle::Real> {
  static oracle::Real exp(const oracle::Real& x) { return boost::multiprecision::exp(x); }
  static oracle::Real sqrt(const oracle::Real& x) { return boost::multiprecision::sqrt(x); }
  static oracle::Real max(const oracle::Real& a, const oracle::Real& b) { return a < b ? b : a; }
};

}  // namespace akv
