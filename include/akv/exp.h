/* akv's exp (spec/arithmetic.md A4) as a header-only C function, for kernel libraries whose
 * SwiGLU (or softmax) must give akv's bits (include/akv/kernels.h: swiglu is bitwise
 * `(g / (1.0f + akv_exp(-g))) * u`).
 *
 * The same IEEE binary32 operations in the same order as reference/exp.hpp's akv::exp, so its
 * bits equal akv's for every input (A4_ExpHeader checks it against akv::exp). Compile it with
 * IEEE semantics: no -ffast-math (it reads NaN with x != x and relies on rintf rounding to
 * nearest even). -ffp-contract does not change it: every multiply-add is an explicit fmaf. */
#ifndef AKV_EXP_H
#define AKV_EXP_H

#include <math.h>
#include <stdint.h>
#include <string.h>

/** 2^e as a float, for e in [-126, 127]: built from the exponent bits, exact. */
static inline float akv_exp_pow2i(int e) {
  const uint32_t bits = (uint32_t)(e + 127) << 23;
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

/** exp(x) in binary32 (A4): NaN -> NaN; x > 88.72283935546875 -> +inf; x < -103.972084045410156
 *  -> +0; else k = rint(x log2 e), r = x - k ln2 by two Cody-Waite FMAs, the degree-7 Taylor
 *  polynomial of e^r in Horner form with FMAs, times 2^k (two scalings past the normal range).
 *  Error below 1 ulp (spec/bounds.md B0). Rounding mode: the default, to nearest even. */
static inline float akv_exp(float x) {
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
  if (ki > 127) return (p * akv_exp_pow2i(127)) * akv_exp_pow2i(ki - 127);
  if (ki < -126) return (p * akv_exp_pow2i(ki + 64)) * akv_exp_pow2i(-64);
  return p * akv_exp_pow2i(ki);
}

#endif /* AKV_EXP_H */
