/* BLIS as an inference engine calls it (llama.cpp's BLAS backend): Y = X W^T by cblas_sgemm
 * for every M, one row (decode) included, so BLIS picks its own paths by shape. Only
 * AKV_OP_MATMUL; the rest falls back to akv's reference. Threads: bli_thread_set_num_threads
 * (BLIS's OpenMP or pthread runtime). What the gate finds is recorded in docs/gate-findings.md
 * with the BLIS version, its kernel set (bli_arch_string; BLIS_ARCH_TYPE overrides it) and the
 * CPU: this is a third-party kernel under test, not a sound one. */
#include <akv/kernels.h>
#include <blis.h>

static int set_threads(void* ctx, int32_t threads) {
  (void)ctx;
  if (threads < 1) return 1;
  bli_thread_set_num_threads(threads);
  return 0;
}

static void matmul(void* ctx, float* Y, size_t ldy, const float* X, size_t ldx, int32_t M, const float* W,
                   const void* prepared, int32_t n, int32_t d, float* scratch) {
  (void)ctx, (void)prepared, (void)scratch;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, d, n, 1.0f, X, (f77_int)ldx, W, n, 0.0f, Y, (f77_int)ldy);
}

const akv_kernels* akv_get_kernels(void) {
  static const akv_kernels table = {
      .abi_version = AKV_KERNELS_ABI_VERSION,
      .name = "blis-sgemm",
      .provides = AKV_OP_MATMUL,
      .set_threads = set_threads,
      .matmul = matmul,
  };
  return &table;
}
