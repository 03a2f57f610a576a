/* Defect: split-K whose split follows the thread count. Each output's k is cut into one
 * contiguous part per thread (set_threads), as a GEMM parallel over k sizes its parts by the
 * workers available; each part is its own FMA chain from +0 and the parts are added in order.
 * One thread is the base's one chain; any two thread counts give a row other bits (GT2:
 * threads). The parts run one after another here; on threads the sums, hence the bits, are
 * the same. */
#include <math.h>
#include <stdint.h>

#include "sound_base.h"

static void matmul(void* ctx, float* Y, size_t ldy, const float* X, size_t ldx, int32_t M, const float* W,
                   const void* prepared, int32_t n, int32_t d, float* scratch) {
  (void)ctx, (void)prepared, (void)scratch;
  const int32_t parts = sb_threads();
  for (int32_t m = 0; m < M; ++m) {
    const float* x = X + (size_t)m * ldx;
    for (int32_t j = 0; j < d; ++j) {
      const float* w = W + (size_t)j * (size_t)n;
      float sum = 0.0f;
      for (int32_t t = 0; t < parts; ++t) {
        const int32_t k0 = (int32_t)((int64_t)n * t / parts), k1 = (int32_t)((int64_t)n * (t + 1) / parts);
        float part = 0.0f;
        for (int32_t k = k0; k < k1; ++k) part = fmaf(x[k], w[k], part);
        sum = t == 0 ? part : sum + part;  /* the first part as it is: one thread is the base's chain */
      }
      Y[(size_t)m * ldy + (size_t)j] = sum;
    }
  }
}

const akv_kernels* akv_get_kernels(void) {
  static const akv_kernels table = SB_TABLE("broken-split-k-by-threads", .matmul = matmul);
  return &table;
}
