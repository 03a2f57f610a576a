/* Defect: an off-by-one reduction bound. The matmul's loop over k stops at n - 1, so the last
 * product of every output is never summed; each output is off by about |x[n-1] w[n-1]|, far
 * beyond B1 (GT3: matmul bound). */
#include "sound_base.h"

static void matmul(void* ctx, float* Y, size_t ldy, const float* X, size_t ldx, int32_t M, const float* W,
                   const void* prepared, int32_t n, int32_t d, float* scratch) {
  (void)prepared;
  /* The base's chain, one output at a time (W's rows are n long), over k < n - 1. */
  for (int32_t m = 0; m < M; ++m)
    for (int32_t j = 0; j < d; ++j)
      sb_matmul(ctx, Y + (size_t)m * ldy + (size_t)j, ldy, X + (size_t)m * ldx, ldx, 1, W + (size_t)j * (size_t)n, NULL,
                n - 1, 1, scratch);
}

const akv_kernels* akv_get_kernels(void) {
  static const akv_kernels table = SB_TABLE("broken-skip-last-k", .matmul = matmul);
  return &table;
}
