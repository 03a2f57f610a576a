/* oneDNN's matmul primitive as an inference engine calls it, through the C API (dnnl.h):
 * Y (M, d) = X (M, n) W^T with W (d, n) read in place as the (n, d) weights of strides (1, n).
 * One primitive per call shape (created per call: the gate's shapes vary). Only AKV_OP_MATMUL;
 * threads: oneDNN's OpenMP runtime, omp_set_num_threads. Findings: docs/gate-findings.md. */
#include <akv/kernels.h>
#include <math.h>
#include <omp.h>
#include <pthread.h>
#include <stdio.h>

#include <dnnl.h>

static dnnl_engine_t g_engine;
static dnnl_stream_t g_stream;
static int g_ready;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static void init(void) {
  g_ready = dnnl_engine_create(&g_engine, dnnl_cpu, 0) == dnnl_success &&
            dnnl_stream_create(&g_stream, g_engine, dnnl_stream_default_flags) == dnnl_success;
}

static int set_threads(void* ctx, int32_t threads) {
  (void)ctx;
  if (threads < 1) return 1;
  omp_set_num_threads(threads);
  return 0;
}

/* One matmul; returns 0 or the first failing status. */
static dnnl_status_t run(float* Y, size_t ldy, const float* X, size_t ldx, int32_t M, const float* W, int32_t n,
                         int32_t d) {
  dnnl_memory_desc_t src_md, w_md, dst_md;
  const dnnl_dims_t src_dims = {M, n}, src_strides = {(dnnl_dim_t)ldx, 1};
  const dnnl_dims_t w_dims = {n, d}, w_strides = {1, n};
  const dnnl_dims_t dst_dims = {M, d}, dst_strides = {(dnnl_dim_t)ldy, 1};
  dnnl_status_t s;
  if ((s = dnnl_memory_desc_init_by_strides(&src_md, 2, src_dims, dnnl_f32, src_strides)) != dnnl_success) return s;
  if ((s = dnnl_memory_desc_init_by_strides(&w_md, 2, w_dims, dnnl_f32, w_strides)) != dnnl_success) return s;
  if ((s = dnnl_memory_desc_init_by_strides(&dst_md, 2, dst_dims, dnnl_f32, dst_strides)) != dnnl_success) return s;
  dnnl_matmul_desc_t desc;
  if ((s = dnnl_matmul_desc_init(&desc, &src_md, &w_md, NULL, &dst_md)) != dnnl_success) return s;
  dnnl_primitive_desc_t pd = NULL;
  dnnl_primitive_t prim = NULL;
  dnnl_memory_t src = NULL, w = NULL, dst = NULL;
  if ((s = dnnl_primitive_desc_create(&pd, &desc, NULL, g_engine, NULL)) != dnnl_success) goto done;
  if ((s = dnnl_primitive_create(&prim, pd)) != dnnl_success) goto done;
  if ((s = dnnl_memory_create(&src, &src_md, g_engine, (void*)X)) != dnnl_success) goto done;
  if ((s = dnnl_memory_create(&w, &w_md, g_engine, (void*)W)) != dnnl_success) goto done;
  if ((s = dnnl_memory_create(&dst, &dst_md, g_engine, Y)) != dnnl_success) goto done;
  const dnnl_exec_arg_t args[3] = {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_DST, dst}};
  if ((s = dnnl_primitive_execute(prim, g_stream, 3, args)) != dnnl_success) goto done;
  s = dnnl_stream_wait(g_stream);
done:
  if (dst) dnnl_memory_destroy(dst);
  if (w) dnnl_memory_destroy(w);
  if (src) dnnl_memory_destroy(src);
  if (prim) dnnl_primitive_destroy(prim);
  if (pd) dnnl_primitive_desc_destroy(pd);
  return s;
}

static void matmul(void* ctx, float* Y, size_t ldy, const float* X, size_t ldx, int32_t M, const float* W,
                   const void* prepared, int32_t n, int32_t d, float* scratch) {
  (void)ctx, (void)prepared, (void)scratch;
  pthread_once(&g_once, init);
  const dnnl_status_t s = g_ready ? run(Y, ldy, X, ldx, M, W, n, d) : dnnl_runtime_error;
  if (s == dnnl_success) return;
  /* The ABI has no error return: say why on stderr and give NaN, which no check passes. */
  fprintf(stderr, "akv_onednn: matmul (M %d, n %d, d %d) failed: dnnl status %d\n", (int)M, (int)n, (int)d, (int)s);
  for (int32_t m = 0; m < M; ++m)
    for (int32_t j = 0; j < d; ++j) Y[(size_t)m * ldy + (size_t)j] = NAN;
}

const akv_kernels* akv_get_kernels(void) {
  static const akv_kernels table = {
      .abi_version = AKV_KERNELS_ABI_VERSION,
      .name = "onednn-matmul",
      .provides = AKV_OP_MATMUL,
      .set_threads = set_threads,
      .matmul = matmul,
  };
  return &table;
}
