// Helpers of the bounds suites (spec/bounds.md): input generators, including the adversarial
// families, and a second summation order standing in for an optimized backend.
#pragma once
#include <rapidcheck.h>

#include <cmath>
#include <string>
#include <vector>

#include "support.hpp"
#include "verify/bounds/end_to_end.hpp"
#include "verify/check/families.hpp"
#include "verify/oracle/real.hpp"

namespace akv::test {

/// Input families of the soundness checks: check::Family (verify/check/families.hpp), the
/// one set the per-op checks draw from too; these suites draw the first four.
using Family = check::Family;

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
      case Family::kDeep: v[i] = std::ldexp(m, *rc::gen::inRange(-149, -119)); break;
    }
  }
  return v;
}

/// The same values in the MPFR oracle's type (exact: every float is a Real).
inline std::vector<oracle::Real> to_real(const std::vector<float>& v) { return {v.begin(), v.end()}; }

/// The dot product in another order: pairwise (blocks of 4 lanes, FMA, reversed lanes), as a
/// SIMD kernel would; a legal order under spec/arithmetic.md, not the reference's.
inline float dot_pairwise_fma(const float* x, int sx, const float* y, int sy, int n) {
  float lane[4] = {0, 0, 0, 0};
  for (int i = n - 1; i >= 0; --i) lane[i % 4] = std::fma(x[static_cast<size_t>(i) * sx], y[static_cast<size_t>(i) * sy], lane[i % 4]);
  return (lane[0] + lane[2]) + (lane[1] + lane[3]);
}

/// B11 for one backend by name: its next-token logits after the first `n` tokens of a bundled
/// conversation, tiny model, against the exact (MPFR) logits and the enclosure's bound. Returns
/// that backend's row of the report (max_fraction <= 1 and violations == 0 when sound); fails
/// the test when the backend is not in the report.
inline bounds::BackendBound enclosure_check(const std::string& backend, size_t n) {
  const auto spans = spans_of("ad02_slack_ut16_claude35.json");
  std::vector<Token> tokens;
  for (const auto& s : spans) tokens.insert(tokens.end(), s.begin(), s.end());
  tokens.resize(std::min(n, tokens.size()));
  const bounds::BoundsReport r = bounds::run_bounds(tiny(), 1, tokens);
  EXPECT_TRUE(std::isfinite(r.max_bound));
  for (const bounds::BackendBound& b : r.backends)
    if (b.name == backend) return b;
  ADD_FAILURE() << "backend " << backend << " not run by run_bounds";
  return {};
}

}  // namespace akv::test
