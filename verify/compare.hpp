// Bitwise comparison of float vectors: the only "equal" akv knows (spec/theorems.md E1).
#pragma once
#include <cmath>
#include <cstring>
#include <span>

namespace akv {

struct Diff {
  bool bitwise_equal = false;  // memcmp == 0 and same length
  float max_abs = 0.0f;        // max |a_i - b_i|; NaN if any difference is NaN
};

/// Compares a and b element by element. Different lengths: not equal, max_abs = +inf.
inline Diff compare(std::span<const float> a, std::span<const float> b) {
  Diff d;
  if (a.size() != b.size()) return {false, INFINITY};
  d.bitwise_equal = a.empty() || std::memcmp(a.data(), b.data(), a.size_bytes()) == 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const float x = std::fabs(a[i] - b[i]);
    if (x != x) return {d.bitwise_equal, NAN};
    if (x > d.max_abs) d.max_abs = x;
  }
  return d;
}

}  // namespace akv
