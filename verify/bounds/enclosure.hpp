// The end-to-end enclosure (spec/bounds.md B11): a scalar carrying the float32 value the
// reference computes and a rigorous bound on its distance to the exact real value of the same
// expression on the same float32 inputs. Instantiating the reference template with it runs
// the float32 arithmetic unchanged (the values are bitwise the float reference's) and
// propagates, op by op, |value - exact| <= err:
//   rounding:  the op's own rounding error (exact for + - x, residual-based for /, u|v| for
//              sqrt, B0 for exp), plus
//   input:     + -: ea + eb;  x: |a| eb + |b| ea + ea eb;  /: (|a| eb + |b| ea) / (|b| (|b| - eb));
//              sqrt: min(sqrt(ea), ea / sqrt(a));  exp: e^a (e^ea - 1);  max: max(ea, eb).
// Every bound is evaluated with outward rounding; an overflowed or undefined step gives +inf.
#pragma once
#include <cmath>
#include <limits>

#include "reference/exp.hpp"
#include "reference/scalar.hpp"
#include "verify/bounds/exp_error.hpp"
#include "verify/bounds/rigorous.hpp"

namespace akv::bounds {

struct Enc {
  float v = 0;   // the float32 value, bit for bit the reference's
  double e = 0;  // |v - exact| <= e

  Enc() = default;
  explicit Enc(float x) : v(x) {}
  explicit Enc(int n) : v(static_cast<float>(n)) {}  // exact for |n| <= 2^24
  Enc(float x, double err) : v(x), e(err) {}
};

namespace detail {
inline constexpr double kInf = std::numeric_limits<double>::infinity();
// The rounding error of a correctly rounded result v (no overflow): <= u|v| when v is normal,
// <= 2^-150 when subnormal.
inline double rounding(float v) {
  const double a = std::fabs(static_cast<double>(v));
  return a >= 0x1p-126 ? mul_up(kU, a) : kEta;
}
inline Enc finish(float v, double e) { return std::isfinite(v) && !std::isnan(e) ? Enc(v, e) : Enc(v, kInf); }
}  // namespace detail

inline Enc operator-(const Enc& a) { return Enc(-a.v, a.e); }

inline Enc operator+(const Enc& a, const Enc& b) {
  const float s = a.v + b.v;
  // TwoSum (Knuth): the rounding error of s, exactly, when s is finite.
  const float bb = s - a.v;
  const float err = (a.v - (s - bb)) + (b.v - bb);
  return detail::finish(s, add_up(add_up(a.e, b.e), std::fabs(err)));
}

inline Enc operator-(const Enc& a, const Enc& b) { return a + (-b); }

inline Enc operator*(const Enc& a, const Enc& b) {
  const float p = a.v * b.v;
  // The exact product is a double (48 bits); its distance to p, rounded up.
  const double exact = static_cast<double>(a.v) * static_cast<double>(b.v);
  const double local = up(std::fabs(exact - static_cast<double>(p)));
  const double aa = std::fabs(static_cast<double>(a.v)), ab = std::fabs(static_cast<double>(b.v));
  const double prop = add_up(add_up(mul_up(aa, b.e), mul_up(ab, a.e)), mul_up(a.e, b.e));
  return detail::finish(p, add_up(prop, local));
}

inline Enc operator/(const Enc& a, const Enc& b) {
  const float q = a.v / b.v;
  const double aa = std::fabs(static_cast<double>(a.v)), ab = std::fabs(static_cast<double>(b.v));
  if (!(b.e < ab)) return Enc(q, detail::kInf);  // the exact divisor may be 0
  // a/b - q = (a - q b) / b; the residual by one double FMA (q b is exact in double).
  const double res = up(std::fabs(std::fma(-static_cast<double>(q), static_cast<double>(b.v), static_cast<double>(a.v))));
  const double local = div_up(res, ab);
  const double prop = div_up(add_up(mul_up(aa, b.e), mul_up(ab, a.e)), mul_dn(ab, sub_dn(ab, b.e)));
  return detail::finish(q, add_up(prop, local));
}

/// Whole-op rule for softmax, found by argument-dependent lookup from ref::attention_head<Enc>
/// (a non-template overload beats the template). Values: exactly ref::softmax<float>'s bits.
/// Bound: the op's own rounding (B5 + B6 at the float inputs), plus the input errors through
/// softmax's true sensitivity: with p = 1 / (1 + R), R = sum_{k != j} e^(s_k - s_j), input
/// errors move R by a factor within e^(+-delta), delta = E_j + max_{k != j} E_k, so
/// |dp| <= e^delta (e^delta - 1) p (1 - p). Per-op chaining would charge 2 delta p instead,
/// even where p is 1 and cannot move (spec/bounds.md B11).
void softmax(Enc* x, int n);

/// Whole-op rule for SiLU, found by ADL from ref::swiglu<Enc>. Value: ref::silu<float>'s bits.
/// Bound: B8's rounding at the float input (up = 1) plus 1.1 e_a, silu being 1.0998-Lipschitz
/// (max of silu' = 1.09984 near a = 2.3994); per-op chaining through a / (1 + e^-a) charges the
/// input error twice and exponentially (spec/bounds.md B11).
Enc silu(const Enc& a);

}  // namespace akv::bounds

namespace akv {

template <>
struct ScalarOps<bounds::Enc> {
  using Enc = bounds::Enc;

  /// akv::exp with its measured error (B0), and e^a (e^ea - 1) from the input's error.
  static Enc exp(const Enc& a) {
    using namespace bounds;
    const float v = akv::exp(a.v);
    if (std::isinf(v) || std::isnan(v) || std::isinf(a.e)) return Enc(v, detail::kInf);
    // |v - e^a| <= kExpRel e^a + kExpAbs, so e^a <= (v + kExpAbs) / (1 - kExpRel).
    const double ea_hi = div_up(add_up(v, kExpAbs), sub_dn(1.0, kExpRel));
    const double local = add_up(mul_up(kExpRel, ea_hi), kExpAbs);
    const double prop = mul_up(ea_hi, expm1_up(a.e));
    return detail::finish(v, add_up(local, prop));
  }

  /// IEEE sqrt (correctly rounded); the exact argument is >= 0 in every use (B2).
  static Enc sqrt(const Enc& a) {
    using namespace bounds;
    const float v = std::sqrt(a.v);
    if (!(a.v >= 0)) return Enc(v, detail::kInf);
    double prop = sqrt_up(a.e);
    if (a.v > 0) prop = std::min(prop, div_up(a.e, sqrt_dn(a.v)));
    return detail::finish(v, add_up(prop, detail::rounding(v)));
  }

  /// max is 1-Lipschitz in each argument: no rounding, the larger input error.
  static Enc max(const Enc& a, const Enc& b) {
    return Enc(a.v < b.v ? b.v : a.v, std::max(a.e, b.e));
  }
};

}  // namespace akv
