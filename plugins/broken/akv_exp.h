/* akv's exp (spec/arithmetic.md A4) in C, for kernels that must match akv's SiLU bit for bit
 * (spec/kernels-cpu.md K6). The same IEEE operations in the same order as reference/exp.hpp. */
#ifndef AKV_PLUGIN_EXP_H
#define AKV_PLUGIN_EXP_H

#include <math.h>
#include <stdint.h>
#include <string.h>

/* 2^e as a float, e in [-126, 127], built from the exponent bits (exact). */
static inline float akv_pow2i(int e) {
  const uint32_t bits = (uint32_t)(e + 127) << 23;
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

/* exp(x) in binary32, A4: k = rint(x log2 e), Cody-Waite reduction by two FMAs, degree-7
 * Taylor polynomial in Horner form with FMAs, scaling by 2^k. */
static inline float akv_expf(float x) {
  if (x != x) return x;
  if (x > 88.72283935546875f) return INFINITY;
  if (x < -103.972084045410156f) return 0.0f;
  const float k = rintf(x * 1.44269502162933349609375f);
  float r = fmaf(-k, 0.693145751953125f, x);
  r = fmaf(-k, 1.428606765330187045e-06f, r);
  float p = 1.98412698412698412698e-4f;
  p = fmaf(p, r, 1.38888888888888888889e-3f);
  p = fmaf(p, r, 8.33333333333333333333e-3f);
  p = fmaf(p, r, 4.16666666666666666667e-2f);
  p = fmaf(p, r, 1.66666666666666666667e-1f);
  p = fmaf(p, r, 0.5f);
  p = fmaf(p, r, 1.0f);
  p = fmaf(p, r, 1.0f);
  const int ki = (int)k;
  if (ki > 127) return (p * akv_pow2i(127)) * akv_pow2i(ki - 127);
  if (ki < -126) return (p * akv_pow2i(ki + 64)) * akv_pow2i(-64);
  return p * akv_pow2i(ki);
}

#endif
