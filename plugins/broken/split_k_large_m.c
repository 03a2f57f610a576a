/* Defect: split-K from a prefill size on. From M >= 64 rows (a prefill chunk) the kernel
 * splits k in two halves, each its own FMA chain, and adds the halves, as a blocked GEMM does
 * when it parallelises over k for tall calls; decode and small batches (M < 64) take the base's
 * one chain. A row's bits then depend on M (GT2), but only calls of 64 rows or more show it:
 * the tiny model never multiplies that many rows. */
#include <math.h>

#include "sound_base.h"

/* The row count from which the kernel splits k. */
#define SPLIT_FROM_M 64

static void matmul(void* ctx, float* Y, size_t ldy, const float* X, size_t ldx, int32_t M, const float* W,
                   const void* prepared, int32_t n, int32_t d, float* scratch) {
  if (M < SPLIT_FROM_M) {
    sb_matmul(ctx, Y, ldy, X, ldx, M, W, prepared, n, d, scratch);
    return;
  }
  const int32_t split = n / 2;
  for (int32_t m = 0; m < M; ++m) {
    const float* x = X + (size_t)m * ldx;
    for (int32_t j = 0; j < d; ++j) {
      const float* w = W + (size_t)j * (size_t)n;
      float lo = 0.0f, hi = 0.0f;
      for (int32_t k = 0; k < split; ++k) lo = fmaf(x[k], w[k], lo);
      for (int32_t k = split; k < n; ++k) hi = fmaf(x[k], w[k], hi);
      Y[(size_t)m * ldy + (size_t)j] = lo + hi;
    }
  }
}

const akv_kernels* akv_get_kernels(void) {
  static const akv_kernels table = SB_TABLE("broken-split-k-large-m", .matmul = matmul);
  return &table;
}
