/* Defect: SwiGLU with the C library's expf. The kernel writes silu as g / (1 + expf(-g)), the
 * usual spelling, where the contract is akv's exp (spec/arithmetic.md A4, <akv/exp.h>, which the
 * sound base calls); libm's expf rounds otherwise on some inputs, so those outputs get other
 * bits than the reference's (GT3: SwiGLU bitwise). */
#include <math.h>

#include "sound_base.h"

static void swiglu(void* ctx, float* out, const float* gate, const float* up, int32_t n) {
  (void)ctx;
  for (int32_t j = 0; j < n; ++j) out[j] = (gate[j] / (1.0f + expf(-gate[j]))) * up[j];
}

const akv_kernels* akv_get_kernels(void) {
  static const akv_kernels table = SB_TABLE("broken-swiglu-expf", .swiglu = swiglu);
  return &table;
}
