/* Defect: a stale scratch read. The matmul keeps a row's d accumulators in scratch (k outer,
 * outputs inner: the loop order that vectorises over outputs) and clears them with
 * memset(acc, 0, d): d bytes, not d floats, so outputs d/4 to d-1 start from whatever the
 * scratch held (GT2: scratch contents; GT3). */
#include <math.h>
#include <string.h>

#include "sound_base.h"

static size_t scratch_floats(void* ctx, uint32_t op, int32_t M, int32_t n, int32_t d) {
  return op == AKV_OP_MATMUL ? (size_t)d : sb_scratch_floats(ctx, op, M, n, d);
}

static void matmul(void* ctx, float* Y, size_t ldy, const float* X, size_t ldx, int32_t M, const float* W,
                   const void* prepared, int32_t n, int32_t d, float* acc) {
  (void)ctx, (void)prepared;
  for (int32_t m = 0; m < M; ++m) {
    const float* x = X + (size_t)m * ldx;
    memset(acc, 0, (size_t)d);
    for (int32_t k = 0; k < n; ++k)
      for (int32_t j = 0; j < d; ++j) acc[j] = fmaf(x[k], W[(size_t)j * (size_t)n + (size_t)k], acc[j]);
    memcpy(Y + (size_t)m * ldy, acc, (size_t)d * sizeof(float));
  }
}

const akv_kernels* akv_get_kernels(void) {
  static const akv_kernels table = SB_TABLE("broken-stale-scratch", .scratch_floats = scratch_floats, .matmul = matmul);
  return &table;
}
