/* Fault: exit() in a kernel. The matmul's error path for a shape it was not written for (n not
 * a multiple of 4) prints a message and calls exit(0), as library code with a fatal-error
 * helper does. The gate must fail the checks that reach it, never report a pass or stop with
 * status 0 (spec/gate.md GT5). Not in the catalog. */
#include <stdio.h>
#include <stdlib.h>

#include "../broken/sound_base.h"

static void matmul(void* ctx, float* Y, size_t ldy, const float* X, size_t ldx, int32_t M, const float* W,
                   const void* prepared, int32_t n, int32_t d, float* scratch) {
  if (n % 4 != 0) {
    fprintf(stderr, "faulty-exit-on-shape: unsupported n=%d\n", (int)n);
    exit(0);
  }
  sb_matmul(ctx, Y, ldy, X, ldx, M, W, prepared, n, d, scratch);
}

const akv_kernels* akv_get_kernels(void) {
  static const akv_kernels table = SB_TABLE("faulty-exit-on-shape", .matmul = matmul);
  return &table;
}
