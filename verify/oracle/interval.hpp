// The a-posteriori enclosure's scalar (spec/bounds.md B17): an interval of two 267-bit MPFR
// numbers (MPFI, Revol & Rouillier 2005, through Boost.Multiprecision), each operation rounded
// outward, so the one reference template run on it returns an interval holding the model's
// real-valued result. Weights stay float32 (exact in any interval), the activations intervals.
#pragma once
#include <boost/multiprecision/mpfi.hpp>

#include <span>
#include <vector>

#include "reference/model.hpp"
#include "reference/scalar.hpp"

namespace akv::oracle {

/// Precision chosen at run time (interval_logits' `bits`): widths grow by a model-dependent
/// factor per layer, so a deep model needs more bits than a shallow one.
using Interval = boost::multiprecision::number<boost::multiprecision::mpfi_float_backend<0>,
                                               boost::multiprecision::et_off>;

/// The default precision of the enclosure, bits at each end: the MPFR oracle's (B12).
inline constexpr long kIntervalBits = 267;

/// The logits (vocab,) of the last of `tokens` enclosed (B17): each interval holds the
/// real-valued model's logit on these float32 weights, computed with intervals of at least
/// `bits` bits (>= 64). The one reference template (oracle_forward.hpp last_logits<float,
/// Interval>) on the model's own float weights, never copied. Tokens in [0, vocab),
/// 1 <= n <= max_ctx (the caller checks). Sets Boost's default precision of Interval for the
/// call: not for concurrent use.
std::vector<Interval> interval_logits(const Model& model, std::span<const Token> tokens, long bits = kIntervalBits);

}  // namespace akv::oracle

namespace akv {

template <>
struct ScalarOps<oracle::Interval> {
  static oracle::Interval exp(const oracle::Interval& x) { return boost::multiprecision::exp(x); }
  static oracle::Interval sqrt(const oracle::Interval& x) { return boost::multiprecision::sqrt(x); }
  /// Softmax's shift (M9). Any real shift m gives the same real softmax, and an interval
  /// computed with an interval m holds exp(s_j - m0) / sum_k exp(s_k - m0) for each real m0 in
  /// it, so any choice is sound; the larger midpoint keeps every exponent near or below 0.
  static oracle::Interval max(const oracle::Interval& a, const oracle::Interval& b) {
    return boost::multiprecision::median(a) < boost::multiprecision::median(b) ? b : a;
  }
};

}  // namespace akv
