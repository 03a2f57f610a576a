/* Fault: a hang. The batched path (M > 2) hands the second half of the rows to a worker and
 * spin-waits for the worker's flag, but no worker was ever started, so the wait never ends.
 * Decode (M == 1) and two-row calls take the base's path. Not in the catalog: it shows that
 * the gate kills a check that runs past --check-timeout and fails it (spec/gate.md GT5). */
#include <stdatomic.h>

#include "../broken/sound_base.h"

static atomic_int second_half_done; /* set by the worker that was never started */

static void matmul(void* ctx, float* Y, size_t ldy, const float* X, size_t ldx, int32_t M, const float* W,
                   const void* prepared, int32_t n, int32_t d, float* scratch) {
  const int32_t half = M > 2 ? M / 2 : M;
  sb_matmul(ctx, Y, ldy, X, ldx, half, W, prepared, n, d, scratch);
  if (half == M) return;
  while (!atomic_load_explicit(&second_half_done, memory_order_acquire)) {
  }
}

const akv_kernels* akv_get_kernels(void) {
  static const akv_kernels table = SB_TABLE("faulty-spin-barrier", .matmul = matmul);
  return &table;
}
