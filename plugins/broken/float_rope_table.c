/* Defect: a second RoPE table in another precision. The kernel ignores the one table it is
 * given and computes cos/sin itself in float (angle = pos * powf(theta, -2i/hd), cosf, sinf,
 * theta 10000 as engines hard-code it), where akv's table takes the angle, cos and sin in double
 * and rounds once (spec/model.md M6): other bits (GT3: RoPE bitwise). */
#include <math.h>

#include "sound_base.h"

static void rope(void* ctx, float* x, size_t ldx, int32_t M, int32_t heads, int32_t head_dim, const int32_t* pos,
                 const float* cos, const float* sin) {
  (void)ctx, (void)cos, (void)sin;
  const int32_t half = head_dim / 2;
  for (int32_t m = 0; m < M; ++m)
    for (int32_t i = 0; i < half; ++i) {
      const float angle = (float)pos[m] * powf(10000.0f, -2.0f * (float)i / (float)head_dim);
      const float c = cosf(angle), s = sinf(angle);
      for (int32_t h = 0; h < heads; ++h) {
        float* v = x + (size_t)m * ldx + (size_t)h * (size_t)head_dim;
        const float x0 = v[i], x1 = v[i + half];
        v[i] = x0 * c - x1 * s;
        v[i + half] = x0 * s + x1 * c;
      }
    }
}

const akv_kernels* akv_get_kernels(void) {
  static const akv_kernels table = SB_TABLE("broken-float-rope-table", .rope = rope);
  return &table;
}
