// The one bitwise comparison of float vectors every check uses (spec/theorems.md E1): memcmp,
// and on a difference the first differing index and max|delta|, so a failure says where.
#pragma once
#include <cmath>
#include <cstddef>
#include <cstring>
#include <ostream>
#include <span>
#include <string>

namespace akv::check {

/// The outcome of same_bits: converts to true when the bytes are equal.
struct BitsDiff {
  bool equal = false;
  size_t size_a = 0, size_b = 0;
  size_t first = 0;      // first differing index (equal: size_a)
  float max_abs = 0.0f;  // max |a_i - b_i| over the common length; NaN if any difference is NaN
  operator bool() const { return equal; }  // NOLINT: a predicate in RC_ASSERT and EXPECT_TRUE
  /// "" when equal, else one line: lengths, or the first index with both values and max|delta|.
  std::string what() const {
    if (equal) return {};
    if (size_a != size_b) return "lengths differ: " + std::to_string(size_a) + " vs " + std::to_string(size_b);
    return "bits differ first at index " + std::to_string(first) + " of " + std::to_string(size_a) +
           ", max|delta| = " + std::to_string(max_abs);
  }
};
inline std::ostream& operator<<(std::ostream& os, const BitsDiff& d) { return os << (d.equal ? "same bits" : d.what()); }

/// Whether a and b have the same length and bytes (memcmp: NaNs with the same payload are
/// equal, +0 and -0 are not); a difference reports its first index and max|a_i - b_i|.
inline BitsDiff same_bits(std::span<const float> a, std::span<const float> b) {
  BitsDiff d;
  d.size_a = a.size();
  d.size_b = b.size();
  d.first = a.size();
  if (a.size() != b.size()) {
    d.max_abs = INFINITY;
    return d;
  }
  d.equal = a.empty() || std::memcmp(a.data(), b.data(), a.size_bytes()) == 0;
  if (d.equal) return d;
  for (size_t i = 0; i < a.size(); ++i) {
    if (d.first == a.size() && std::memcmp(&a[i], &b[i], sizeof(float)) != 0) d.first = i;
    const float x = std::fabs(a[i] - b[i]);
    if (x != x || d.max_abs != d.max_abs) d.max_abs = NAN;
    else if (x > d.max_abs) d.max_abs = x;
  }
  return d;
}

}  // namespace akv::check
