/* llama.cpp's CPU kernels (ggml 0.25.3 from the llama-cpp-python 0.3.36 sdist, built by
 * scripts/fetch-engines) behind include/akv/kernels.h, called as llama.cpp's graph calls them
 * (src/llama-graph.cpp at commit 0c1e57098bba): every call builds one ggml graph on the given
 * buffers and runs it on the CPU backend (ggml_backend_graph_compute, the path llama.cpp's
 * scheduler takes), intermediates placed by ggml's graph allocator:
 *   matmul     ggml_mul_mat(W, x): W (n, d) of type AKV_GGML_WTYPE, x (n, M) float32. F32: W's own
 *              memory. Q8_0 / Q4_1: W quantized once by prepare_weight (ggml_quantize_chunk) into
 *              the buffer llama.cpp would give the weight (an extra buffer type of the CPU device
 *              when one takes the tensor, as CPU_REPACK takes Q4_0 on AVX2 and Q8_0 on ARM; on
 *              x86 Q8_0 and Q4_1 stay in the CPU buffer); AKV_GGML_EXTRA_BUFTS=0:
 *              always the CPU buffer, llama.cpp's use_extra_bufts = false); ggml then quantizes x to
 *              Q8_0 / Q8_1 itself. n is padded with zeros to a multiple of 32 (a quantized block)
 *              when it is not one: model widths are, the gate's drawn widths need not be;
 *   rmsnorm    ggml_rms_norm(x, eps) then ggml_mul(., w) (build_norm);
 *   rope       ggml_rope_ext(x, pos, NULL, head_dim, GGML_ROPE_TYPE_NEOX, ...), the rotate-half
 *              pairs of the ABI (llama.cpp's llama models take mode NORM on permuted weights,
 *              the same products on other pairs). ggml computes its own angles from freq_base:
 *              the ABI passes the table, not theta, so theta is read back from the table (row 1,
 *              the last pair: theta = angle^(-head_dim/(head_dim-2)), rounded to an integer);
 *   swiglu     ggml_swiglu_split(gate, up) on one row of n (the ABI's swiglu is flat);
 *   add        ggml_add;
 *   attention  build_attn_mha: q (head_dim, M, heads), K and V (head_dim, n_kv, kv_heads)
 *              permuted views of the cache, n_kv = the keys padded to a multiple of 256 as
 *              llama_kv_cache::get_n_kv pads them (rows past pos0 + M zero and masked), the
 *              mask -INF for every key a query must not see. AKV_GGML_FLASH: ggml_flash_attn_ext
 *              with K and V cast to F16 and an F16 mask (what build_attn_mha does to an F32
 *              cache), precision F32; else kq = ggml_mul_mat(k, q), ggml_soft_max_ext(kq, mask,
 *              scale, 0), ggml_mul_mat(v^T, kq) on the float32 cache (V transposed, as
 *              llama.cpp stores it without flash attention).
 * Threads: ggml_backend_cpu_set_n_threads; by default llama.cpp's (cpu_get_num_math: the
 * physical cores). A third-party kernel under test, not a sound one: what the gate finds is
 * docs/gate-findings.md. A failure (no memory, a graph that does not compute) writes NaN. */
#include <akv/kernels.h>
#include <ggml-alloc.h>
#include <ggml-backend.h>
#include <ggml-cpu.h>
#include <ggml.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef AKV_GGML_WTYPE
#define AKV_GGML_WTYPE GGML_TYPE_F32
#endif
#ifndef AKV_GGML_FLASH
#define AKV_GGML_FLASH 1
#endif
#ifndef AKV_GGML_LLAMA_CPP
#define AKV_GGML_LLAMA_CPP "unknown commit"
#endif
#ifndef AKV_GGML_NAME
#define AKV_GGML_NAME "ggml"
#endif

enum { kMaxNodes = 64, kKvPad = 256 };

typedef struct Ctx {
  ggml_backend_t cpu;
  ggml_gallocr_t galloc;
  int threads;
  int ready;  /* 1 initialised, -1 failed */
} Ctx;

static Ctx g_ctx;

/* ggml's INFO and DEBUG lines (the graph allocator's reallocations) are dropped. */
static void quiet_log(enum ggml_log_level level, const char* text, void* user) {
  (void)user;
  if (level == GGML_LOG_LEVEL_WARN || level == GGML_LOG_LEVEL_ERROR) fputs(text, stderr);
}

/* llama.cpp's default thread count (common/common.cpp cpu_get_num_math on x86 Linux): the
 * physical cores, counted as distinct thread_siblings sets. */
static int physical_cores(void) {
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  if (cpus < 1) return 4;
  char seen[256][64];
  int n = 0;
  for (long c = 0; c < cpus && c < 256; ++c) {
    char path[128], buf[64] = {0};
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%ld/topology/thread_siblings", c);
    FILE* f = fopen(path, "r");
    if (f == NULL) return (int)cpus;
    if (fgets(buf, sizeof buf, f) == NULL) buf[0] = 0;
    fclose(f);
    int dup = 0;
    for (int i = 0; i < n && !dup; ++i) dup = strcmp(seen[i], buf) == 0;
    if (!dup) memcpy(seen[n++], buf, sizeof buf);
  }
  return n > 0 ? n : (int)cpus;
}

static Ctx* ctx_get(void) {
  if (g_ctx.ready == 0) {
    ggml_log_set(quiet_log, NULL);
    g_ctx.cpu = ggml_backend_cpu_init();
    g_ctx.galloc = g_ctx.cpu ? ggml_gallocr_new(ggml_backend_cpu_buffer_type()) : NULL;
    g_ctx.threads = physical_cores();
    g_ctx.ready = g_ctx.cpu && g_ctx.galloc ? 1 : -1;
  }
  return g_ctx.ready == 1 ? &g_ctx : NULL;
}

static int set_threads(void* ctx, int32_t threads) {
  (void)ctx;
  if (threads < 1 || ctx_get() == NULL) return 1;
  g_ctx.threads = threads;
  return 0;
}

static void fill_nan(float* out, size_t ld, int64_t rows, int64_t cols) {
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) out[i * ld + j] = NAN;
}

/* A graph's metadata (the tensors' data are the caller's buffers or the allocator's). */
static struct ggml_context* meta(void) {
  struct ggml_init_params p = {kMaxNodes * ggml_tensor_overhead() + ggml_graph_overhead(), NULL, true};
  return ggml_init(p);
}

/* A tensor of the caller's contiguous float buffer p (ne0, ne1, ne2). */
static struct ggml_tensor* input(struct ggml_context* g, const void* p, enum ggml_type type, int64_t ne0, int64_t ne1,
                                 int64_t ne2) {
  struct ggml_tensor* t = ggml_new_tensor_3d(g, type, ne0, ne1, ne2);
  t->data = (void*)p;
  return t;
}

/* Runs `out`'s graph on the CPU backend; its result stays in the allocator's buffer until the
 * next call. Returns 0 on success. */
static int compute(Ctx* c, struct ggml_context* g, struct ggml_tensor* out) {
  struct ggml_cgraph* gf = ggml_new_graph_custom(g, kMaxNodes, false);
  ggml_set_output(out);
  ggml_build_forward_expand(gf, out);
  if (!ggml_gallocr_alloc_graph(c->galloc, gf)) return 1;
  ggml_backend_cpu_set_n_threads(c->cpu, c->threads);
  return ggml_backend_graph_compute(c->cpu, gf) == GGML_STATUS_SUCCESS ? 0 : 1;
}

/* dst (rows, cols) with row stride ld <- t's contiguous float rows. */
static void fetch(float* dst, size_t ld, int64_t rows, int64_t cols, const struct ggml_tensor* t) {
  const float* src = (const float*)t->data;
  for (int64_t r = 0; r < rows; ++r) memmove(dst + r * ld, src + r * cols, (size_t)cols * sizeof(float));
}

/* ---- matmul */

static int64_t padded_k(int64_t n) {
  const int64_t b = ggml_blck_size(AKV_GGML_WTYPE);
  return (n + b - 1) / b * b;
}

typedef struct Weight {
  struct ggml_context* ctx;
  ggml_backend_buffer_t buf;
  struct ggml_tensor* w;
  const char* buft;  /* the buffer type's name: "CPU", "CPU_REPACK" */
} Weight;

static void release_weight(void* ctx, void* prepared) {
  (void)ctx;
  Weight* w = (Weight*)prepared;
  if (w == NULL) return;
  if (w->buf) ggml_backend_buffer_free(w->buf);
  if (w->ctx) ggml_free(w->ctx);
  free(w);
}

/* Whether llama.cpp would place weight t in buffer type b: its mul_mat by a float32 batch is
 * supported there (llama-model.cpp weight_buft_supported). */
static int buft_takes(ggml_backend_dev_t dev, ggml_backend_buffer_type_t b, const struct ggml_tensor* t) {
  struct ggml_context* g = meta();
  if (g == NULL) return 0;
  struct ggml_tensor* w = ggml_dup_tensor(g, t);
  ggml_backend_buffer_t dummy = ggml_backend_buft_alloc_buffer(b, 0);
  w->buffer = dummy;
  struct ggml_tensor* x = ggml_new_tensor_2d(g, GGML_TYPE_F32, t->ne[0], 512);
  struct ggml_tensor* op = ggml_mul_mat(g, w, x);
  const int ok = dummy != NULL && ggml_backend_dev_supports_op(dev, op);
  if (dummy) ggml_backend_buffer_free(dummy);
  ggml_free(g);
  return ok;
}

static void* prepare_weight(void* ctx, const float* W, int32_t d, int32_t n) {
  (void)ctx;
  if (ctx_get() == NULL) return NULL;
  Weight* w = (Weight*)calloc(1, sizeof(Weight));
  if (w == NULL) return NULL;
  struct ggml_init_params p = {2 * ggml_tensor_overhead(), NULL, true};
  w->ctx = ggml_init(p);
  const int64_t k = padded_k(n);
  if (w->ctx == NULL) goto fail;
  w->w = ggml_new_tensor_2d(w->ctx, AKV_GGML_WTYPE, k, d);
  /* F32: the caller's memory, as an mmap'ed model's, when it has ggml's TENSOR_ALIGNMENT (32) */
  if (AKV_GGML_WTYPE == GGML_TYPE_F32 && k == n && (uintptr_t)W % 32 == 0) {
    w->buf = ggml_backend_cpu_buffer_from_ptr((void*)W, (size_t)d * (size_t)n * sizeof(float));
    if (w->buf == NULL || ggml_backend_tensor_alloc(w->buf, w->w, (void*)W) != GGML_STATUS_SUCCESS) goto fail;
    w->buft = "CPU (the weight's own memory)";
    return w;
  }
  /* Quantized (or padded) rows, then into the buffer type llama.cpp picks: an extra buffer
   * type of the CPU device that takes the tensor, else the CPU buffer. */
  float* rows = (float*)calloc((size_t)d * (size_t)k, sizeof(float));
  void* q = malloc(ggml_row_size(AKV_GGML_WTYPE, k) * (size_t)d);
  if (rows == NULL || q == NULL) {
    free(rows), free(q);
    goto fail;
  }
  for (int64_t r = 0; r < d; ++r) memcpy(rows + r * k, W + r * n, (size_t)n * sizeof(float));
  const size_t bytes = AKV_GGML_WTYPE == GGML_TYPE_F32
                           ? (size_t)d * (size_t)k * sizeof(float)
                           : ggml_quantize_chunk(AKV_GGML_WTYPE, rows, q, 0, d, k, NULL);
  const void* src = AKV_GGML_WTYPE == GGML_TYPE_F32 ? (const void*)rows : q;
  ggml_backend_reg_t reg = ggml_backend_cpu_reg();
  ggml_backend_dev_t dev = ggml_backend_reg_dev_get(reg, 0);
  ggml_backend_buffer_type_t chosen = ggml_backend_cpu_buffer_type();
  ggml_backend_dev_get_extra_bufts_t extra =
      (ggml_backend_dev_get_extra_bufts_t)ggml_backend_reg_get_proc_address(reg, "ggml_backend_dev_get_extra_bufts");
  const char* use_extra = getenv("AKV_GGML_EXTRA_BUFTS");  /* "0": llama.cpp's use_extra_bufts = false */
  if (extra != NULL && !(use_extra != NULL && strcmp(use_extra, "0") == 0))
    for (ggml_backend_buffer_type_t* b = extra(dev); b != NULL && *b != NULL; ++b)
      if (buft_takes(dev, *b, w->w)) {
        chosen = *b;
        break;
      }
  w->buft = ggml_backend_buft_name(chosen);
  w->buf = ggml_backend_buft_alloc_buffer(chosen, ggml_backend_buft_get_alloc_size(chosen, w->w));
  int ok = w->buf != NULL && ggml_backend_tensor_alloc(w->buf, w->w, ggml_backend_buffer_get_base(w->buf)) == GGML_STATUS_SUCCESS;
  if (ok) ggml_backend_tensor_set(w->w, src, 0, bytes);
  free(rows), free(q);
  if (!ok) goto fail;
  return w;
fail:
  release_weight(NULL, w);
  return NULL;
}

static void matmul(void* ctx, float* Y, size_t ldy, const float* X, size_t ldx, int32_t M, const float* W,
                   const void* prepared, int32_t n, int32_t d, float* scratch) {
  (void)scratch;
  Ctx* c = ctx_get();
  Weight* own = NULL;
  const Weight* w = (const Weight*)prepared;
  if (w == NULL) w = own = (Weight*)prepare_weight(ctx, W, d, n);
  const int64_t k = padded_k(n);
  float* x = (float*)calloc((size_t)M * (size_t)k, sizeof(float));  /* llama.cpp's activations: contiguous */
  struct ggml_context* g = c && w && x ? meta() : NULL;
  int failed = g == NULL;
  if (!failed) {
    for (int64_t r = 0; r < M; ++r) memcpy(x + r * k, X + r * ldx, (size_t)n * sizeof(float));
    struct ggml_tensor* y = ggml_mul_mat(g, w->w, input(g, x, GGML_TYPE_F32, k, M, 1));
    failed = compute(c, g, y);
    if (!failed) fetch(Y, ldy, M, d, y);
  }
  if (failed) fill_nan(Y, ldy, M, d);
  if (g) ggml_free(g);
  free(x);
  release_weight(NULL, own);
}

/* ---- row-wise ops */

static void rmsnorm(void* ctx, float* out, const float* x, const float* w, int32_t M, int32_t n, float eps) {
  (void)ctx;
  Ctx* c = ctx_get();
  struct ggml_context* g = c ? meta() : NULL;
  int failed = g == NULL;
  if (!failed) {
    struct ggml_tensor* y = ggml_mul(g, ggml_rms_norm(g, input(g, x, GGML_TYPE_F32, n, M, 1), eps),
                                     input(g, w, GGML_TYPE_F32, n, 1, 1));
    failed = compute(c, g, y);
    if (!failed) fetch(out, (size_t)n, M, n, y);
  }
  if (failed) fill_nan(out, (size_t)n, M, n);
  if (g) ggml_free(g);
}

/* theta from the table: the last pair's angle at position 1 is theta^(-(hd-2)/hd). */
static float table_theta(int32_t hd, const float* cos, const float* sin) {
  const int half = hd / 2;
  if (half < 2) return 10000.0f;
  const double angle = atan2((double)sin[half + half - 1], (double)cos[half + half - 1]);
  return (float)nearbyint(pow(angle, -(double)hd / (double)(hd - 2)));
}

static void rope(void* ctx, float* x, size_t ldx, int32_t M, int32_t heads, int32_t hd, const int32_t* pos,
                 const float* cos, const float* sin) {
  (void)ctx;
  Ctx* c = ctx_get();
  const int64_t w = (int64_t)heads * hd;
  float* buf = (float*)malloc((size_t)M * (size_t)w * sizeof(float));
  struct ggml_context* g = c && buf ? meta() : NULL;
  int failed = g == NULL;
  if (!failed) {
    for (int64_t r = 0; r < M; ++r) memcpy(buf + r * w, x + r * ldx, (size_t)w * sizeof(float));
    struct ggml_tensor* y = ggml_rope_ext(g, input(g, buf, GGML_TYPE_F32, hd, heads, M), input(g, pos, GGML_TYPE_I32, M, 1, 1),
                                          NULL, hd, GGML_ROPE_TYPE_NEOX, 0, table_theta(hd, cos, sin), 1.0f, 0.0f, 1.0f,
                                          32.0f, 1.0f);
    failed = compute(c, g, y);
    if (!failed) fetch(x, ldx, M, w, y);
  }
  if (failed) fill_nan(x, ldx, M, w);
  if (g) ggml_free(g);
  free(buf);
}

static void swiglu(void* ctx, float* out, const float* gate, const float* up, int32_t n) {
  (void)ctx;
  Ctx* c = ctx_get();
  struct ggml_context* g = c ? meta() : NULL;
  int failed = g == NULL;
  if (!failed) {
    struct ggml_tensor* y = ggml_swiglu_split(g, input(g, gate, GGML_TYPE_F32, n, 1, 1), input(g, up, GGML_TYPE_F32, n, 1, 1));
    failed = compute(c, g, y);
    if (!failed) fetch(out, (size_t)n, 1, n, y);
  }
  if (failed) fill_nan(out, (size_t)n, 1, n);
  if (g) ggml_free(g);
}

static void add(void* ctx, float* x, const float* y, int32_t n) {
  (void)ctx;
  Ctx* c = ctx_get();
  struct ggml_context* g = c ? meta() : NULL;
  int failed = g == NULL;
  if (!failed) {
    struct ggml_tensor* s = ggml_add(g, input(g, x, GGML_TYPE_F32, n, 1, 1), input(g, y, GGML_TYPE_F32, n, 1, 1));
    failed = compute(c, g, s);
    if (!failed) fetch(x, (size_t)n, 1, n, s);
  }
  if (failed) fill_nan(x, (size_t)n, 1, n);
  if (g) ggml_free(g);
}

/* ---- attention */

static void attention(void* ctx, float* out, size_t ldo, const float* q, size_t ldq, const float* k, const float* v,
                      size_t ldkv, const uint8_t* mask, int32_t M, int32_t pos0, int32_t heads, int32_t kvh, int32_t hd,
                      float scale, float* scratch) {
  (void)ctx, (void)scratch;
  Ctx* c = ctx_get();
  const int64_t n = (int64_t)pos0 + M, n_kv = (n + kKvPad - 1) / kKvPad * kKvPad;
  const int64_t qd = (int64_t)heads * hd, kvd = (int64_t)kvh * hd;
  float* qb = (float*)malloc((size_t)M * (size_t)qd * sizeof(float));
  float* kb = (float*)calloc((size_t)n_kv * (size_t)kvd, sizeof(float));  /* rows >= n: zero, masked */
  float* vb = (float*)calloc((size_t)n_kv * (size_t)kvd, sizeof(float));
  void* mb = malloc((size_t)n_kv * (size_t)M * (AKV_GGML_FLASH ? sizeof(ggml_fp16_t) : sizeof(float)));
  struct ggml_context* g = c && qb && kb && vb && mb ? meta() : NULL;
  int failed = g == NULL;
  if (!failed) {
    for (int64_t r = 0; r < M; ++r) memcpy(qb + r * qd, q + r * ldq, (size_t)qd * sizeof(float));
    for (int64_t p = 0; p < n; ++p) {
      memcpy(kb + p * kvd, k + p * ldkv, (size_t)kvd * sizeof(float));
      if (AKV_GGML_FLASH) memcpy(vb + p * kvd, v + p * ldkv, (size_t)kvd * sizeof(float));
      else  /* V transposed: (kv_heads, head_dim, n_kv), as llama.cpp's cache without flash attention */
        for (int64_t i = 0; i < kvd; ++i) vb[i * n_kv + p] = v[p * ldkv + i];
    }
    /* The mask: 0 where query m sees key p (p <= pos0 + m, not masked), -INF elsewhere. */
    for (int64_t m = 0; m < M; ++m)
      for (int64_t p = 0; p < n_kv; ++p) {
        const int sees = p <= pos0 + m && (mask == NULL || mask[p] == 0);
        if (AKV_GGML_FLASH) ((ggml_fp16_t*)mb)[m * n_kv + p] = sees ? 0x0000 : 0xFC00; /* +0, -inf in binary16 */
        else ((float*)mb)[m * n_kv + p] = sees ? 0.0f : -INFINITY;
      }
    struct ggml_tensor* qt = ggml_permute(g, input(g, qb, GGML_TYPE_F32, hd, heads, M), 0, 2, 1, 3);
    struct ggml_tensor* kt = ggml_permute(g, input(g, kb, GGML_TYPE_F32, hd, kvh, n_kv), 0, 2, 1, 3);
    struct ggml_tensor* y;
    if (AKV_GGML_FLASH) {
      struct ggml_tensor* vt = ggml_permute(g, input(g, vb, GGML_TYPE_F32, hd, kvh, n_kv), 0, 2, 1, 3);
      struct ggml_tensor* fa = ggml_flash_attn_ext(g, qt, ggml_cast(g, kt, GGML_TYPE_F16), ggml_cast(g, vt, GGML_TYPE_F16),
                                                   input(g, mb, GGML_TYPE_F16, n_kv, M, 1), scale, 0.0f, 0.0f);
      ggml_prec_set_acc(fa, GGML_PREC_F32);
      y = ggml_reshape_2d(g, fa, qd, M);
    } else {
      struct ggml_tensor* kq = ggml_mul_mat(g, kt, qt);
      ggml_prec_set_acc(kq, GGML_PREC_F32);
      kq = ggml_soft_max_ext(g, kq, input(g, mb, GGML_TYPE_F32, n_kv, M, 1), scale, 0.0f);
      struct ggml_tensor* kqv = ggml_mul_mat(g, input(g, vb, GGML_TYPE_F32, n_kv, hd, kvh), kq);
      y = ggml_cont_2d(g, ggml_permute(g, kqv, 0, 2, 1, 3), qd, M);
    }
    failed = compute(c, g, y);
    if (!failed) fetch(out, ldo, M, qd, y);
  }
  if (failed) fill_nan(out, ldo, M, qd);
  if (g) ggml_free(g);
  free(qb), free(kb), free(vb), free(mb);
}

/* What the findings record beside the results (scripts/gate-catalog reads it with ctypes): the
 * ggml version, the default threads, the CPU features ggml was built for and where a weight of
 * this library's type goes (the buffer type llama.cpp would pick). Not part of the ABI. */
const char* akv_ggml_info(void) {
  static char info[512];
  if (info[0] == 0) {
    Ctx* c = ctx_get();
    const char* buft = "?";
    float* w = (float*)calloc(576 * 576, sizeof(float));  /* a SmolLM2 attention weight's shape */
    Weight* p = c && w ? (Weight*)prepare_weight(NULL, w, 576, 576) : NULL;
    if (p) buft = p->buft;
    snprintf(info, sizeof info,
             "ggml %s (llama.cpp %s); weights %s in the %s buffer; default threads %d; AVX2 %d AVX512 %d AVX512_BF16 %d "
             "AVX512_VNNI %d F16C %d FMA %d; llamafile sgemm %d",
             ggml_version(), AKV_GGML_LLAMA_CPP, ggml_type_name(AKV_GGML_WTYPE), buft, c ? c->threads : 0, ggml_cpu_has_avx2(),
             ggml_cpu_has_avx512(), ggml_cpu_has_avx512_bf16(), ggml_cpu_has_avx512_vnni(), ggml_cpu_has_f16c(),
             ggml_cpu_has_fma(), ggml_cpu_has_llamafile());
    release_weight(NULL, p);
    free(w);
  }
  return info;
}

const akv_kernels* akv_get_kernels(void) {
  static const akv_kernels table = {
      .abi_version = AKV_KERNELS_ABI_VERSION,
      .name = AKV_GGML_NAME,
      .provides = AKV_OP_MATMUL | AKV_OP_RMSNORM | AKV_OP_ROPE | AKV_OP_ATTENTION | AKV_OP_SWIGLU | AKV_OP_ADD,
      .ctx = NULL,
      .set_threads = set_threads,
      .scratch_floats = NULL,
      .prepare_weight = prepare_weight,
      .release_weight = release_weight,
      .matmul = matmul,
      .rmsnorm = rmsnorm,
      .rope = rope,
      .swiglu = swiglu,
      .add = add,
      .attention = attention,
      .evict = NULL,
  };
  return &table;
}
