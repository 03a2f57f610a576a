/* A kernel library for akv's gate (include/akv/kernels.h): matmul and RMSNorm; akv uses its
 * reference ops for the rest. Both are invariant by construction: every output row is computed
 * on its own, in an order fixed by n alone, with no threads and no scratch. */
#include <akv/kernels.h>
#include <math.h>

/* Y (M, d) = X (M, n) W^T: one FMA chain per output, k = 0 .. n-1 from +0. Its error is within
 * the reference's bound for an n-term dot product (one rounding per step). */
static void matmul(void* ctx, float* Y, size_t ldy, const float* X, size_t ldx, int32_t M, const float* W,
                   const void* prepared, int32_t n, int32_t d, float* scratch) {
  (void)ctx, (void)prepared, (void)scratch;
  for (int32_t m = 0; m < M; ++m) {
    const float* x = X + (size_t)m * ldx;
    for (int32_t j = 0; j < d; ++j) {
      const float* w = W + (size_t)j * (size_t)n;
      float acc = 0.0f;
      for (int32_t k = 0; k < n; ++k) acc = fmaf(x[k], w[k], acc);
      Y[(size_t)m * ldy + j] = acc;
    }
  }
}

/* RMSNorm of each row, the reference's operations in its order (spec/model.md M7):
 * ss = sum of x^2 left to right, inv = 1 / sqrt(ss / n + eps), out = (x * inv) * w.
 * out may alias x: ss is complete before any element is written. */
static void rmsnorm(void* ctx, float* out, const float* x, const float* w, int32_t M, int32_t n, float eps) {
  (void)ctx;
  for (int32_t m = 0; m < M; ++m) {
    const float* xr = x + (size_t)m * (size_t)n;
    float* yr = out + (size_t)m * (size_t)n;
    float ss = 0.0f;
    for (int32_t j = 0; j < n; ++j) ss = ss + xr[j] * xr[j];
    const float inv = 1.0f / sqrtf(ss / (float)n + eps);
    for (int32_t j = 0; j < n; ++j) yr[j] = (xr[j] * inv) * w[j];
  }
}

static const akv_kernels table = {
    .abi_version = AKV_KERNELS_ABI_VERSION,
    .name = "example-fma-chain",
    .provides = AKV_OP_MATMUL | AKV_OP_RMSNORM,
    .matmul = matmul,
    .rmsnorm = rmsnorm,
};

__attribute__((visibility("default"))) const akv_kernels* akv_get_kernels(void) { return &table; }
