// Helpers of the bounds suites (spec/bounds.md): input generators, including the adversarial
// families, and a second summation order standing in for an optimized backend.
#pragma once
#include <rapidcheck.h>

#include <cmath>
#include <vector>

namespace akv::test {

/// Input families of the soundness checks: plain, cancellation (pairs x, -x plus a small
/// residue), large dynamic range (exponents over +-40), near underflow (products subnormal).
enum class Family { kPlain, kCancel, kRange, kTiny };

inline rc::Gen<Family> gen_family() {
  return rc::gen::element(Family::kPlain, Family::kCancel, Family::kRange, Family::kTiny);
}

/// n floats of family f from the RapidCheck stream.
inline std::vector<float> gen_values(Family f, int n) {
  std::vector<float> v(n);
  for (int i = 0; i < n; ++i) {
    const float m = static_cast<float>(*rc::gen::inRange(-1000000, 1000001)) / 1000000.0f;
    switch (f) {
      case Family::kPlain: v[i] = 2.0f * m; break;
      case Family::kCancel: v[i] = (i % 2 == 1) ? -v[i - 1] * (1.0f + 1e-6f * m) : 4.0f * m; break;
      case Family::kRange: v[i] = std::ldexp(m, *rc::gen::inRange(-40, 41)); break;
      case Family::kTiny: v[i] = std::ldexp(m, *rc::gen::inRange(-80, -60)); break;
    }
  }
  return v;
}

/// The dot product in another order: pairwise (blocks of 4 lanes, FMA, reversed lanes), as a
/// SIMD kernel would; a legal order under spec/arithmetic.md, not the reference's.
inline float dot_pairwise_fma(const float* x, int sx, const float* y, int sy, int n) {
  float lane[4] = {0, 0, 0, 0};
  for (int i = n - 1; i >= 0; --i) lane[i % 4] = std::fma(x[static_cast<size_t>(i) * sx], y[static_cast<size_t>(i) * sy], lane[i % 4]);
  return (lane[0] + lane[2]) + (lane[1] + lane[3]);
}

}  // namespace akv::test
