/* OpenBLAS as an inference engine calls it: Y = X W^T by cblas_sgemm for a block of rows
 * (prefill), by cblas_sgemv for one row (one-token decode). Only AKV_OP_MATMUL; the rest falls
 * back to akv's reference. Threads: openblas_set_num_threads. What the gate finds is recorded in
 * docs/gate-findings.md: this is a third-party kernel under test, not a sound one. */
#include <akv/kernels.h>
#include <cblas.h>

static int set_threads(void* ctx, int32_t threads) {
  (void)ctx;
  if (threads < 1) return 1;
  openblas_set_num_threads(threads);
  return 0;
}

static void matmul(void* ctx, float* Y, size_t ldy, const float* X, size_t ldx, int32_t M, const float* W,
                   const void* prepared, int32_t n, int32_t d, float* scratch) {
  (void)ctx, (void)prepared, (void)scratch;
  if (M == 1)
    cblas_sgemv(CblasRowMajor, CblasNoTrans, d, n, 1.0f, W, n, X, 1, 0.0f, Y, 1);
  else
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, d, n, 1.0f, X, (blasint)ldx, W, n, 0.0f, Y,
                (blasint)ldy);
}

const akv_kernels* akv_get_kernels(void) {
  static const akv_kernels table = {
      .abi_version = AKV_KERNELS_ABI_VERSION,
      .name = "openblas-sgemm",
      .provides = AKV_OP_MATMUL,
      .set_threads = set_threads,
      .matmul = matmul,
  };
  return &table;
}
