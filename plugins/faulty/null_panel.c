/* Fault: a crash. The batched path (M > 2) reads the packed weight panel that prepare_weight
 * would have made, but the table sets no prepare_weight, so `prepared` is NULL and the read
 * faults (SIGSEGV). Decode (M == 1) and two-row calls take the base's path and are sound.
 * Not in the catalog: it shows that the gate reports a crash as the failure of the check that
 * ran it and goes on with the rest (spec/gate.md GT5). */
#include <math.h>

#include "../broken/sound_base.h"

static void matmul(void* ctx, float* Y, size_t ldy, const float* X, size_t ldx, int32_t M, const float* W,
                   const void* prepared, int32_t n, int32_t d, float* scratch) {
  if (M <= 2) {
    sb_matmul(ctx, Y, ldy, X, ldx, M, W, prepared, n, d, scratch);
    return;
  }
  const float* panel = (const float*)prepared; /* NULL: no prepare_weight */
  for (int32_t r = 0; r < M; ++r)
    for (int32_t j = 0; j < d; ++j) {
      float acc = 0.0f;
      for (int32_t k = 0; k < n; ++k) acc = fmaf(X[(size_t)r * ldx + (size_t)k], panel[(size_t)k * (size_t)d + (size_t)j], acc);
      Y[(size_t)r * ldy + (size_t)j] = acc;
    }
}

const akv_kernels* akv_get_kernels(void) {
  static const akv_kernels table = SB_TABLE("faulty-null-panel", .matmul = matmul);
  return &table;
}
