/* Defect: eviction that re-rotates keys instead of recomputing (the "K-shift" of engines). It
 * moves the survivors' rows [end, size) down to begin in every layer, turns their keys back by
 * end - begin positions with the table's row (end - begin), and returns size - (end - begin):
 * nothing is recomputed. Deeper layers already attended to the span and the rotation composes
 * with rounding, so evict != never (GT4: E1). */
#include <string.h>

#include "sound_base.h"

static int32_t evict(void* ctx, const akv_cache_view* c, int32_t begin, int32_t end) {
  (void)ctx;
  const int32_t shift = end - begin, half = c->head_dim / 2;
  const size_t kv_dim = (size_t)c->kv_heads * (size_t)c->head_dim;
  const float* cs = c->cos + (size_t)shift * (size_t)half;
  const float* sn = c->sin + (size_t)shift * (size_t)half;
  for (int32_t l = 0; l < c->layers; ++l)
    for (int32_t p = end; p < c->size; ++p) {
      float* k = c->k[l] + (size_t)(p - shift) * kv_dim;
      memmove(k, c->k[l] + (size_t)p * kv_dim, kv_dim * sizeof(float));
      memmove(c->v[l] + (size_t)(p - shift) * kv_dim, c->v[l] + (size_t)p * kv_dim, kv_dim * sizeof(float));
      for (int32_t h = 0; h < c->kv_heads; ++h) {
        float* x = k + (size_t)h * (size_t)c->head_dim;
        for (int32_t i = 0; i < half; ++i) {  /* rotation by -shift: cos(-a) = cos a, sin(-a) = -sin a */
          const float x0 = x[i], x1 = x[i + half];
          x[i] = x0 * cs[i] + x1 * sn[i];
          x[i + half] = x1 * cs[i] - x0 * sn[i];
        }
      }
    }
  return c->size - shift;
}

const akv_kernels* akv_get_kernels(void) {
  static const akv_kernels table = SB_TABLE("broken-evict-rerotate", .evict = evict);
  return &table;
}
