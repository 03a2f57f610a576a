/* Defect: one FMA contracted at a single call site. RoPE's first output is written as
 * fmaf(x0, c, -(x1 * s)), what a compiler with -ffp-contract=fast makes of x0 * c - x1 * s;
 * one rounding fewer, so the bits differ from the reference's rotation (GT3: RoPE bitwise). */
#include <math.h>

#include "sound_base.h"

static void rope(void* ctx, float* x, size_t ldx, int32_t M, int32_t heads, int32_t head_dim, const int32_t* pos,
                 const float* cos, const float* sin) {
  (void)ctx;
  const int32_t half = head_dim / 2;
  for (int32_t m = 0; m < M; ++m) {
    const float* c = cos + (size_t)pos[m] * (size_t)half;
    const float* s = sin + (size_t)pos[m] * (size_t)half;
    for (int32_t h = 0; h < heads; ++h) {
      float* v = x + (size_t)m * ldx + (size_t)h * (size_t)head_dim;
      for (int32_t i = 0; i < half; ++i) {
        const float x0 = v[i], x1 = v[i + half];
        v[i] = fmaf(x0, c[i], -(x1 * s[i]));
        v[i + half] = x0 * s[i] + x1 * c[i];
      }
    }
  }
}

const akv_kernels* akv_get_kernels(void) {
  static const akv_kernels table = SB_TABLE("broken-fma-in-rope", .rope = rope);
  return &table;
}
