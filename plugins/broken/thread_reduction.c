/* Defect: a reduction whose order follows the thread count. RMSNorm's sum of squares is split
 * into one contiguous chunk per thread (set_threads), each chunk summed from +0 and the
 * threads' partial sums added in order: a row's bits change with the thread count (GT2). The
 * chunks run one after another here; on threads the sums, hence the bits, are the same. */
#include <math.h>

#include "sound_base.h"

static void rmsnorm(void* ctx, float* out, const float* x, const float* w, int32_t M, int32_t n, float eps) {
  (void)ctx;
  const int32_t t = sb_threads();
  for (int32_t m = 0; m < M; ++m) {
    const float* xr = x + (size_t)m * (size_t)n;
    float* o = out + (size_t)m * (size_t)n;
    float ss = 0.0f;
    for (int32_t c = 0; c < t; ++c) {
      float part = 0.0f;
      for (int32_t j = (int32_t)((int64_t)n * c / t); j < (int32_t)((int64_t)n * (c + 1) / t); ++j)
        part = part + xr[j] * xr[j];
      ss = ss + part;
    }
    const float inv = 1.0f / sqrtf(ss / (float)n + eps);
    for (int32_t j = 0; j < n; ++j) o[j] = (xr[j] * inv) * w[j];
  }
}

const akv_kernels* akv_get_kernels(void) {
  static const akv_kernels table = {
      AKV_KERNELS_ABI_VERSION, "broken-thread-reduction", SB_PROVIDES, NULL, sb_set_threads, sb_scratch_floats, NULL,
      NULL, sb_matmul, rmsnorm, sb_rope, sb_swiglu, sb_add, sb_attention, sb_evict};
  return &table;
}
