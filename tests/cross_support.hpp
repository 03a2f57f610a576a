// Helpers of the cross-backend bound checks (spec/bounds.md B10, B14; spec/kernels-cpu.md K12;
// spec/kernels-cuda.md G11): seeded input families, including the adversarial ones, a
// RapidCheck runner with at least 200 cases, and a tally of how close the observed distances
// come to the proven bounds (reported, never asserted beyond <= 1).
#pragma once
#include <gtest/gtest.h>
#include <rapidcheck.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "reference/prng.hpp"

// librapidcheck's listener that prints the reproduce string at exit (not declared in its
// public headers; verify/props/harness.cpp uses it the same way).
namespace rc::detail {
TestListener& globalTestListener();
}  // namespace rc::detail

namespace akv::test {

/// Input families: plain values in [-2, 2); cancellation (pairs x, -x(1 + 1e-6 m) plus a
/// residue); wide dynamic range (m 2^e, e in [-40, 40]); near underflow (m 2^e,
/// e in [-80, -61]: products of two are subnormal); deep underflow (m 2^e, e in [-149, -120]:
/// the values themselves subnormal or nearly).
enum class Fam { kPlain, kCancel, kRange, kTiny, kDeep };
inline const char* fam_name(Fam f) {
  switch (f) {
    case Fam::kPlain: return "plain";
    case Fam::kCancel: return "cancel";
    case Fam::kRange: return "range";
    case Fam::kTiny: return "tiny";
    case Fam::kDeep: return "deep";
  }
  return "?";
}

/// n floats of family f from `seed`, times `scale` (plain and cancellation only).
inline std::vector<float> fam_values(Fam f, size_t n, uint64_t seed, float scale = 1.0f) {
  SplitMix64 g{seed * 0x9E3779B97F4A7C15ull + 0x51ED270B};
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) {
    const float m = g.uniform();  // [-1, 1)
    switch (f) {
      case Fam::kPlain: v[i] = 2.0f * m * scale; break;
      case Fam::kCancel: v[i] = (i % 2 == 1) ? -v[i - 1] * (1.0f + 1e-6f * m) : 4.0f * m * scale; break;
      case Fam::kRange: v[i] = std::ldexp(m, static_cast<int>(g.next() % 81) - 40); break;
      case Fam::kTiny: v[i] = std::ldexp(m, static_cast<int>(g.next() % 20) - 80); break;
      case Fam::kDeep: v[i] = std::ldexp(m, static_cast<int>(g.next() % 30) - 149); break;
    }
  }
  return v;
}

inline rc::Gen<Fam> gen_fam() { return rc::gen::element(Fam::kPlain, Fam::kCancel, Fam::kRange, Fam::kTiny, Fam::kDeep); }

/// A reduction length: mostly 1..300, one case in six long (2048..4096).
inline rc::Gen<int> gen_length() {
  return rc::gen::weightedOneOf<int>({{5, rc::gen::inRange(1, 301)}, {1, rc::gen::inRange(2048, 4097)}});
}

/// Runs `body` as a RapidCheck property named `id` with at least 200 cases (more if RC_PARAMS
/// says max_success), failing the current GoogleTest test with RapidCheck's message.
template <class F>
void check_property(const std::string& id, F body) {
  rc::detail::TestParams params = rc::detail::configuration().testParams;
  const char* env = std::getenv("RC_PARAMS");
  if (!(env && std::string(env).find("max_success") != std::string::npos) && params.maxSuccess < 200)
    params.maxSuccess = 200;
  rc::detail::TestMetadata meta;
  meta.id = id;
  meta.description = id;
  const auto result = rc::detail::checkProperty(rc::detail::toProperty(body), meta, params,
                                                rc::detail::globalTestListener(), rc::detail::configuration().reproduce);
  std::ostringstream msg;
  rc::detail::printResultMessage(result, msg);
  EXPECT_TRUE(result.template is<rc::detail::SuccessResult>()) << id << ": " << msg.str();
  if (result.template is<rc::detail::SuccessResult>()) {
    EXPECT_GE(result.template get<rc::detail::SuccessResult>().numSuccess, 200) << id;
  }
}

/// How close the observed distances came to the bounds: max observed / bound (<= 1 or the
/// check failed), the largest observed distance, and the number of nonzero distances.
struct Closeness {
  double max_frac = 0, max_dist = 0, bound_at_max = 0;
  long nonzero = 0, compared = 0;
  /// Records |a - b| against bound; returns whether |a - b| <= bound (NaN fails).
  bool add(double a, double b, double bound) {
    const double dist = std::fabs(a - b);
    ++compared;
    if (dist > 0) ++nonzero;
    if (bound > 0 && std::isfinite(bound)) max_frac = std::max(max_frac, dist / bound);
    if (dist > max_dist) max_dist = dist, bound_at_max = bound;
    return dist <= bound;
  }
  void print(const std::string& what) const {
    std::printf("[ observed ] %s: %ld of %ld elements differ; max |opt - ref| = %.3g (bound there %.3g); "
                "max |opt - ref| / bound = %.3g (bound/observed >= %.3g)\n",
                what.c_str(), nonzero, compared, max_dist, bound_at_max, max_frac, max_frac > 0 ? 1 / max_frac : 0.0);
    ::testing::Test::RecordProperty(what + "_max_abs", std::to_string(max_dist));
    ::testing::Test::RecordProperty(what + "_max_frac_of_bound", std::to_string(max_frac));
  }
};

}  // namespace akv::test

namespace akv::test {

/// One attention head's inputs: q (d,), k and v (n, d) row-major (stride d). Scores are
/// about q_scale times unit size: q_scale 2^-70 makes them near-uniform with subnormal
/// products, 40 makes them span hundreds (most exps underflow, some to subnormals). Keys are
/// plain or cancelling; values of any family.
struct AttnInput {
  int n = 1, d = 8;
  std::vector<float> q, k, v;
};
inline AttnInput attn_input(int n, int d, float q_scale, Fam kfam, Fam vfam, uint64_t seed) {
  AttnInput a;
  a.n = n;
  a.d = d;
  a.q = fam_values(Fam::kPlain, d, seed, q_scale);
  a.k = fam_values(kfam, static_cast<size_t>(n) * d, seed + 1);
  a.v = fam_values(vfam, static_cast<size_t>(n) * d, seed + 2);
  return a;
}
/// The same from the RapidCheck stream: n from gen_length, d in {8, 16, 32, 64, 128}.
inline AttnInput gen_attn_input() {
  const int n = *gen_length(), d = *rc::gen::element(8, 16, 32, 64, 128);
  const float qs = *rc::gen::element(0x1p-70f, 1.0f, 8.0f, 40.0f);
  const Fam kf = *rc::gen::element(Fam::kPlain, Fam::kCancel), vf = *gen_fam();
  return attn_input(n, d, qs, kf, vf, *rc::gen::inRange<uint64_t>(0, 1u << 30));
}

}  // namespace akv::test
