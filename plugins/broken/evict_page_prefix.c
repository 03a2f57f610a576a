/* Defect: eviction that rewrites prefix rows. A paged cache releases the pages the span
 * touches: it clears rows from begin rounded down to a page of 16 up to end, in every layer,
 * and returns begin. Rows [floor16(begin), begin) belong to the prefix: written, and never
 * recomputed (GT4: E3 prefix untouched, and E1). */
#include <string.h>

#include "sound_base.h"

#define PAGE 16

static int32_t evict(void* ctx, const akv_cache_view* c, int32_t begin, int32_t end) {
  (void)ctx;
  const size_t kv_dim = (size_t)c->kv_heads * (size_t)c->head_dim;
  const int32_t first = begin - begin % PAGE;
  for (int32_t l = 0; l < c->layers; ++l) {
    memset(c->k[l] + (size_t)first * kv_dim, 0, (size_t)(end - first) * kv_dim * sizeof(float));
    memset(c->v[l] + (size_t)first * kv_dim, 0, (size_t)(end - first) * kv_dim * sizeof(float));
  }
  return begin;
}

const akv_kernels* akv_get_kernels(void) {
  static const akv_kernels table = SB_TABLE("broken-evict-page-prefix", .evict = evict);
  return &table;
}
