/* Fault: output in the way. The sound base, but its add leaves a debug print on stdout in each
 * call, as a kernel under development does. Its numbers are sound, so the gate must pass it,
 * and `akv gate --json` must still print one valid JSON report (the library's stdout is kept
 * out of it). Not in the catalog (spec/gate.md GT5). */
#include <stdio.h>

#include "../broken/sound_base.h"

static void add(void* ctx, float* x, const float* y, int32_t n) {
  printf("add: n=%d {\"debug\": true}\n", (int)n);
  sb_add(ctx, x, y, n);
}

const akv_kernels* akv_get_kernels(void) {
  static const akv_kernels table = SB_TABLE("faulty-chatty-add", .add = add);
  return &table;
}
