// The one bitwise comparison of float vectors every check uses (spec/theorems.md E1): memcmp,
// and on a difference the first differing index and max|delta|, so a failure says where. A NaN
// or an Inf in either vector is a failure of its own (spec/arithmetic.md A5), never "the same".
#pragma once
#include <cmath>
#include <cstddef>
#include <cstring>
#include <fmt/format.h>
#include <ostream>
#include <span>
#include <string>

namespace akv::check {

/// The outcome of same_bits: converts to true when the bytes are equal and every value finite.
struct BitsDiff {
  bool equal = false;
  size_t size_a = 0, size_b = 0;
  size_t first = 0;          // first differing index (equal: size_a)
  size_t non_finite = 0;     // NaN / Inf values in a and b together (A5)
  size_t first_non_finite = 0;  // the first one's index (in a, else in b)
  float non_finite_value = 0;   // that value
  float max_abs = 0.0f;  // max |a_i - b_i| over the finite pairs of the common length
  operator bool() const { return equal; }  // NOLINT: a predicate in RC_ASSERT and EXPECT_TRUE
  /// "" when equal, else one line: lengths, a non-finite value, or the first differing index
  /// with max|delta|.
  std::string what() const {
    if (equal) return {};
    if (size_a != size_b) return "lengths differ: " + std::to_string(size_a) + " vs " + std::to_string(size_b);
    if (non_finite)
      return fmt::format("{} non-finite value(s), the first {} at index {} of {}: a comparison that meets a NaN or an Inf "
                         "compares nothing (A5)",
                         non_finite, non_finite_value, first_non_finite, size_a);
    return "bits differ first at index " + std::to_string(first) + " of " + std::to_string(size_a) +
           ", max|delta| = " + std::to_string(max_abs);
  }
};
inline std::ostream& operator<<(std::ostream& os, const BitsDiff& d) { return os << (d.equal ? "same bits" : d.what()); }

/// Whether a and b have the same length and bytes (memcmp: +0 and -0 differ) and hold only
/// finite values; a difference reports its first index and max|a_i - b_i|, a non-finite value
/// its first index (A5: two NaNs of one payload are not "equal").
inline BitsDiff same_bits(std::span<const float> a, std::span<const float> b) {
  BitsDiff d;
  d.size_a = a.size();
  d.size_b = b.size();
  d.first = a.size();
  if (a.size() != b.size()) {
    d.max_abs = INFINITY;
    return d;
  }
  const bool bytes = a.empty() || std::memcmp(a.data(), b.data(), a.size_bytes()) == 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!bytes && d.first == a.size() && std::memcmp(&a[i], &b[i], sizeof(float)) != 0) d.first = i;
    const bool fa = std::isfinite(a[i]), fb = std::isfinite(b[i]);
    if (!fa || !fb) {
      if (d.non_finite == 0) {
        d.first_non_finite = i;
        d.non_finite_value = fa ? b[i] : a[i];
      }
      d.non_finite += !fa + !fb;
      continue;
    }
    if (!bytes) d.max_abs = std::fmax(d.max_abs, std::fabs(a[i] - b[i]));
  }
  d.equal = bytes && d.non_finite == 0;
  return d;
}

}  // namespace akv::check
