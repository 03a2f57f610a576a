// Bitwise comparison of float vectors: the only "equal" akv knows (spec/theorems.md E1), and
// never on a NaN or an Inf (spec/arithmetic.md A5: a comparison that meets one compares nothing).
#pragma once
#include <cmath>
#include <cstddef>
#include <cstring>
#include <span>

namespace akv {

struct Diff {
  bool same_bytes = false;   // memcmp == 0 and same length (NaNs of one payload are "the same")
  size_t non_finite = 0;     // NaN / Inf elements in a and b together (A5)
  size_t first_non_finite = 0;  // index of the first one (in a, else in b); meaningful when non_finite > 0
  bool first_in_a = true;       // whether that first one is a's
  float max_abs = 0.0f;         // max |a_i - b_i| over the elements where both are finite; +inf: lengths differ
  /// Equal in the only sense that proves anything: the same bytes, every one finite (E1, A5).
  bool equal() const { return same_bytes && non_finite == 0; }
  /// Whether the two vectors were comparable at all: same length, every element finite.
  bool comparable() const { return non_finite == 0 && max_abs != INFINITY; }
};

/// Compares a and b element by element. Different lengths: not equal, max_abs = +inf. A
/// non-finite element in either makes the result not equal() (spec/arithmetic.md A5) and is
/// counted, with the index of the first; max_abs covers the finite pairs only.
inline Diff compare(std::span<const float> a, std::span<const float> b) {
  Diff d;
  if (a.size() != b.size()) {
    d.max_abs = INFINITY;
    return d;
  }
  d.same_bytes = a.empty() || std::memcmp(a.data(), b.data(), a.size_bytes()) == 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const bool fa = std::isfinite(a[i]), fb = std::isfinite(b[i]);
    if (!fa || !fb) {
      if (d.non_finite == 0) {
        d.first_non_finite = i;
        d.first_in_a = !fa;
      }
      d.non_finite += !fa + !fb;
      continue;
    }
    const float x = std::fabs(a[i] - b[i]);
    if (x > d.max_abs) d.max_abs = x;
  }
  return d;
}

/// The first non-finite element of v, or v.size() when every one is finite.
inline size_t first_non_finite(std::span<const float> v) {
  for (size_t i = 0; i < v.size(); ++i)
    if (!std::isfinite(v[i])) return i;
  return v.size();
}

}  // namespace akv
