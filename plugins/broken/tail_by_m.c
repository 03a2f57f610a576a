/* Defect: a tail (n mod 16) summed in another order when M changes. The batched path (M > 1)
 * runs the FMA chain over the full blocks of 16 k and sums the remaining n mod 16 products as
 * a chain of their own, added at the end; one row (M == 1) continues the one chain, as the
 * base does. With n not a multiple of 16 a row's bits depend on M (GT2). */
#include <math.h>

#include "sound_base.h"

static void matmul(void* ctx, float* Y, size_t ldy, const float* X, size_t ldx, int32_t M, const float* W,
                   const void* prepared, int32_t n, int32_t d, float* scratch) {
  if (M == 1) {
    sb_matmul(ctx, Y, ldy, X, ldx, M, W, prepared, n, d, scratch);
    return;
  }
  const int32_t full = n - n % 16;
  for (int32_t m = 0; m < M; ++m) {
    const float* x = X + (size_t)m * ldx;
    for (int32_t j = 0; j < d; ++j) {
      const float* w = W + (size_t)j * (size_t)n;
      float acc = 0.0f, tail = 0.0f;
      for (int32_t k = 0; k < full; ++k) acc = fmaf(x[k], w[k], acc);
      for (int32_t k = full; k < n; ++k) tail = fmaf(x[k], w[k], tail);
      Y[(size_t)m * ldy + (size_t)j] = acc + tail;
    }
  }
}

const akv_kernels* akv_get_kernels(void) {
  static const akv_kernels table = SB_TABLE("broken-tail-by-m", .matmul = matmul);
  return &table;
}
