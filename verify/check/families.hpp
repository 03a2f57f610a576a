// The inputs of the per-op checks (spec/bounds.md B10, B14; spec/kernels-cpu.md K12;
// spec/kernels-cuda.md G11): seeded value families, the adversarial ones included, small
// integers (exact in any order), and one attention head's inputs, seeded or from RapidCheck.
#pragma once
#include <rapidcheck.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "reference/prng.hpp"

namespace akv::check {

/// Input families: plain values in [-2, 2); cancellation (pairs x, -x(1 + 1e-6 m) plus a
/// residue); wide dynamic range (m 2^e, e in [-40, 40]); near underflow (m 2^e,
/// e in [-80, -61]: products of two are subnormal); deep underflow (m 2^e, e in [-149, -120]:
/// the values themselves subnormal or nearly).
enum class Family { kPlain, kCancel, kRange, kTiny, kDeep };
inline const char* family_name(Family f) {
  switch (f) {
    case Family::kPlain: return "plain";
    case Family::kCancel: return "cancel";
    case Family::kRange: return "range";
    case Family::kTiny: return "tiny";
    case Family::kDeep: return "deep";
  }
  return "?";
}

/// n floats of family f from `seed`, times `scale` (plain and cancellation only).
inline std::vector<float> family_values(Family f, size_t n, uint64_t seed, float scale = 1.0f) {
  SplitMix64 g{seed * 0x9E3779B97F4A7C15ull + 0x51ED270B};
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) {
    const float m = g.uniform();  // [-1, 1)
    switch (f) {
      case Family::kPlain: v[i] = 2.0f * m * scale; break;
      case Family::kCancel: v[i] = (i % 2 == 1) ? -v[i - 1] * (1.0f + 1e-6f * m) : 4.0f * m * scale; break;
      case Family::kRange: v[i] = std::ldexp(m, static_cast<int>(g.next() % 81) - 40); break;
      case Family::kTiny: v[i] = std::ldexp(m, static_cast<int>(g.next() % 20) - 80); break;
      case Family::kDeep: v[i] = std::ldexp(m, static_cast<int>(g.next() % 30) - 149); break;
    }
  }
  return v;
}

/// n small integers in [-k, k] as floats from `seed`: their products and sums are exact in
/// any order while |sums| < 2^24, so every conforming backend gives the reference's bits.
inline std::vector<float> int_values(size_t n, uint64_t seed, int k) {
  SplitMix64 g{seed * 0x9E3779B97F4A7C15ull + 11};
  std::vector<float> v(n);
  for (float& x : v) x = static_cast<float>(static_cast<int>(g.next() % (2 * k + 1)) - k);
  return v;
}

/// rows x n values whose sum of squares is exact in any order (spec/gate.md GT3, RMSNorm): row r
/// is nonzero integers in [-k, k], k the largest with n k^2 < 2^24 (every partial sum an integer
/// below 2^24), times 2^exp2[r] (exact; |exp2| <= 50 keeps every square normal). So every
/// conforming kernel gets the reference's ss, and from there M7's operations give its bits.
inline std::vector<float> exact_square_rows(int rows, int n, uint64_t seed, const std::vector<int>& exp2) {
  int k = 1;
  while (k < 4095 && static_cast<double>(n) * (k + 1) * (k + 1) < 0x1p24) ++k;
  SplitMix64 g{seed * 0x9E3779B97F4A7C15ull + 29};
  std::vector<float> v(static_cast<size_t>(rows) * n);
  for (int r = 0; r < rows; ++r)
    for (int j = 0; j < n; ++j) {
      const int m = static_cast<int>(g.next() % k) + 1;
      v[static_cast<size_t>(r) * n + j] = std::ldexp(static_cast<float>(g.next() % 2 ? m : -m), exp2[r % exp2.size()]);
    }
  return v;
}

inline rc::Gen<Family> gen_fam() { return rc::gen::element(Family::kPlain, Family::kCancel, Family::kRange, Family::kTiny, Family::kDeep); }

/// A reduction length: mostly 1..300, one case in six long (2048..4096).
inline rc::Gen<int> gen_length() {
  return rc::gen::weightedOneOf<int>({{5, rc::gen::inRange(1, 301)}, {1, rc::gen::inRange(2048, 4097)}});
}

/// One attention head's inputs: q (d,), k and v (n, d) row-major (stride d). Scores are
/// about q_scale times unit size: q_scale 2^-70 makes them near-uniform with subnormal
/// products, 40 makes them span hundreds (most exps underflow, some to subnormals). Keys are
/// plain or cancelling; values of any family.
struct AttnInput {
  int n = 1, d = 8;
  std::vector<float> q, k, v;
};
inline AttnInput attn_input(int n, int d, float q_scale, Family kfam, Family vfam, uint64_t seed) {
  AttnInput a;
  a.n = n;
  a.d = d;
  a.q = family_values(Family::kPlain, d, seed, q_scale);
  a.k = family_values(kfam, static_cast<size_t>(n) * d, seed + 1);
  a.v = family_values(vfam, static_cast<size_t>(n) * d, seed + 2);
  return a;
}
/// The same from the RapidCheck stream: n from gen_length, d in {8, 16, 32, 64, 128}.
inline AttnInput gen_attn_input() {
  const int n = *gen_length(), d = *rc::gen::element(8, 16, 32, 64, 128);
  const float qs = *rc::gen::element(0x1p-70f, 1.0f, 8.0f, 40.0f);
  const Family kf = *rc::gen::element(Family::kPlain, Family::kCancel), vf = *gen_fam();
  return attn_input(n, d, qs, kf, vf, *rc::gen::inRange<uint64_t>(0, 1u << 30));
}

}  // namespace akv::check
