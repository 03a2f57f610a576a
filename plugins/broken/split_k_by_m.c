/* Defect: split-K whose split depends on M. One row (decode, M == 1) has too few outputs to
 * keep the cores busy, so the kernel splits k in two halves, sums each as its own FMA chain
 * and adds the halves; M > 1 takes the base's one chain. A row's bits then depend on M (GT2). */
#include <math.h>

#include "sound_base.h"

static void matmul(void* ctx, float* Y, size_t ldy, const float* X, size_t ldx, int32_t M, const float* W,
                   const void* prepared, int32_t n, int32_t d, float* scratch) {
  if (M != 1) {
    sb_matmul(ctx, Y, ldy, X, ldx, M, W, prepared, n, d, scratch);
    return;
  }
  const int32_t split = n / 2;
  for (int32_t j = 0; j < d; ++j) {
    const float* w = W + (size_t)j * (size_t)n;
    float lo = 0.0f, hi = 0.0f;
    for (int32_t k = 0; k < split; ++k) lo = fmaf(X[k], w[k], lo);
    for (int32_t k = split; k < n; ++k) hi = fmaf(X[k], w[k], hi);
    Y[j] = lo + hi;
  }
}

const akv_kernels* akv_get_kernels(void) {
  static const akv_kernels table = SB_TABLE("broken-split-k-by-m", .matmul = matmul);
  return &table;
}
