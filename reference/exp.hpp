// akv's exp: the one exponential of every backend (spec/arithmetic.md A4).
// Header-only and __host__ __device__-ready so the scalar, SIMD and CUDA code run the same
// IEEE operations in the same order.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>

#ifndef AKV_HD
#if defined(__CUDACC__)
#define AKV_HD __host__ __device__
#else
#define AKV_HD
#endif
#endif

namespace akv {

/// 2^e as a float, for e in [-126, 127] (exact, built from the exponent bits).
AKV_HD inline float pow2i(int e) {
  const uint32_t bits = static_cast<uint32_t>(e + 127) << 23;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

/// exp(x) in binary32 (A4): k = rint(x * log2(e)); r = x - k*ln2 (Cody-Waite, two FMAs);
/// exp(r) by the degree-7 Taylor polynomial in Horner form with FMAs; times 2^k in at most
/// two exact-or-once-rounded scalings. x > 88.72284 gives +inf, x < -103.97209 gives +0,
/// NaN gives NaN. Error: see spec/arithmetic.md A4 (measured exhaustively).
AKV_HD inline float exp(float x) {
  if (x != x) return x;
  if (x > 88.72283935546875f) return INFINITY;
  if (x < -103.972084045410156f) return 0.0f;
  const float k = std::rint(x * 1.44269502162933349609375f);
  float r = std::fma(-k, 0.693145751953125f, x);       // ln2 high part, 16 bits
  r = std::fma(-k, 1.428606765330187045e-06f, r);      // ln2 low part
  float p = 1.98412698412698412698e-4f;                // 1/5040
  p = std::fma(p, r, 1.38888888888888888889e-3f);      // 1/720
  p = std::fma(p, r, 8.33333333333333333333e-3f);      // 1/120
  p = std::fma(p, r, 4.16666666666666666667e-2f);      // 1/24
  p = std::fma(p, r, 1.66666666666666666667e-1f);      // 1/6
  p = std::fma(p, r, 0.5f);
  p = std::fma(p, r, 1.0f);
  p = std::fma(p, r, 1.0f);
  const int ki = static_cast<int>(k);
  if (ki > 127) return (p * pow2i(127)) * pow2i(ki - 127);
  if (ki < -126) return (p * pow2i(ki + 64)) * pow2i(-64);  // one rounding, into subnormals
  return p * pow2i(ki);
}

}  // namespace akv
