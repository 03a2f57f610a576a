// Exact dot products and sums of float32 values in GMP integers (spec/bounds.md B13): every
// float32 is m 2^e with e >= -172 after normalising m to 24 bits, so every product is an
// integer multiple of 2^-344 and a sum of them is exact as an integer N 2^-kShift.
#pragma once
#include <span>

namespace akv::oracle {

/// |computed - sum_i x[i*sx] y[i*sy]| over i < n, rounded up to a double (0 iff exact).
double dot_abs_err_up(float computed, const float* x, int sx, const float* y, int sy, int n);

/// The exact dot product rounded to the nearest float32 (round-to-nearest-even); the value
/// every order must produce bitwise when all its partial sums are representable.
float dot_rounded(const float* x, int sx, const float* y, int sy, int n);

inline double dot_abs_err_up(float computed, std::span<const float> x, std::span<const float> y) {
  return dot_abs_err_up(computed, x.data(), 1, y.data(), 1, static_cast<int>(x.size()));
}
inline float dot_rounded(std::span<const float> x, std::span<const float> y) {
  return dot_rounded(x.data(), 1, y.data(), 1, static_cast<int>(x.size()));
}

}  // namespace akv::oracle
