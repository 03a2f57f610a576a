/* Defect: RMSNorm's mean taken as ss * (1/n) instead of ss / n. A kernel hoists the division
 * out of the row loop, as one multiply per row is cheaper than a divide; 1/n is inexact for n
 * not a power of two, so the mean is rounded twice and the outputs get other bits than the
 * reference's on rows whose sum of squares every order gives alike (GT3: rmsnorm exact). Every
 * output stays within 2 B2 of the reference's, so only a bitwise check catches it. */
#include <math.h>

#include "sound_base.h"

static void rmsnorm(void* ctx, float* out, const float* x, const float* w, int32_t M, int32_t n, float eps) {
  (void)ctx;
  const float inv_n = 1.0f / (float)n;
  for (int32_t m = 0; m < M; ++m) {
    const float* xr = x + (size_t)m * (size_t)n;
    float* o = out + (size_t)m * (size_t)n;
    float ss = 0.0f;
    for (int32_t j = 0; j < n; ++j) ss = ss + xr[j] * xr[j];
    const float inv = 1.0f / sqrtf(ss * inv_n + eps);
    for (int32_t j = 0; j < n; ++j) o[j] = (xr[j] * inv) * w[j];
  }
}

const akv_kernels* akv_get_kernels(void) {
  static const akv_kernels table = SB_TABLE("broken-rmsnorm-reciprocal-mean", .rmsnorm = rmsnorm);
  return &table;
}
