/* The sound base (sound_base.h): every op, invariant and accurate, in plain C. */
#include "sound_base.h"

#include <math.h>
#include <pthread.h>

#include <akv/exp.h>

#define SB_MAX_THREADS 64

static int32_t g_threads = 1;

int32_t sb_threads(void) { return __atomic_load_n(&g_threads, __ATOMIC_RELAXED); }

int sb_set_threads(void* ctx, int32_t threads) {
  (void)ctx;
  if (threads < 1 || threads > SB_MAX_THREADS) return 1;
  __atomic_store_n(&g_threads, threads, __ATOMIC_RELAXED);
  return 0;
}

typedef struct {
  void (*fn)(void*, int32_t, int32_t);
  void* arg;
  int32_t begin, end;
} sb_range;

static void* sb_run_range(void* p) {
  const sb_range* r = (const sb_range*)p;
  r->fn(r->arg, r->begin, r->end);
  return NULL;
}

void sb_parallel(int32_t count, void (*fn)(void* arg, int32_t begin, int32_t end), void* arg) {
  int32_t t = sb_threads();
  if (t > count) t = count;
  if (t <= 1) {
    fn(arg, 0, count);
    return;
  }
  sb_range ranges[SB_MAX_THREADS];
  pthread_t ids[SB_MAX_THREADS];
  int started[SB_MAX_THREADS] = {0};
  for (int32_t i = 0; i < t; ++i) {
    ranges[i] = (sb_range){fn, arg, (int32_t)((int64_t)count * i / t), (int32_t)((int64_t)count * (i + 1) / t)};
    /* A thread that cannot start runs on the caller: the split changes, never the result. */
    if (i > 0) started[i] = pthread_create(&ids[i], NULL, sb_run_range, &ranges[i]) == 0;
  }
  for (int32_t i = 0; i < t; ++i)
    if (!started[i]) sb_run_range(&ranges[i]);
  for (int32_t i = 1; i < t; ++i)
    if (started[i]) pthread_join(ids[i], NULL);
}

size_t sb_scratch_floats(void* ctx, uint32_t op, int32_t M, int32_t n, int32_t d) {
  (void)ctx, (void)M;
  /* attention: the scores of one (row, head) and one head's block accumulators (d >= head_dim) */
  return op == AKV_OP_ATTENTION ? (size_t)n + (size_t)d : 0;
}

typedef struct {
  float* Y;
  size_t ldy;
  const float* X;
  size_t ldx;
  int32_t M, n;
  const float* W;
} sb_matmul_args;

/* Outputs [begin, end) of every row: one FMA chain each, k in order from +0. */
static void sb_matmul_outputs(void* p, int32_t begin, int32_t end) {
  const sb_matmul_args* a = (const sb_matmul_args*)p;
  for (int32_t m = 0; m < a->M; ++m) {
    const float* x = a->X + (size_t)m * a->ldx;
    for (int32_t j = begin; j < end; ++j) {
      const float* w = a->W + (size_t)j * (size_t)a->n;
      float acc = 0.0f;
      for (int32_t k = 0; k < a->n; ++k) acc = fmaf(x[k], w[k], acc);
      a->Y[(size_t)m * a->ldy + (size_t)j] = acc;
    }
  }
}

void sb_matmul(void* ctx, float* Y, size_t ldy, const float* X, size_t ldx, int32_t M, const float* W,
               const void* prepared, int32_t n, int32_t d, float* scratch) {
  (void)ctx, (void)prepared, (void)scratch;
  sb_matmul_args a = {Y, ldy, X, ldx, M, n, W};
  sb_parallel(d, sb_matmul_outputs, &a);
}

void sb_rmsnorm(void* ctx, float* out, const float* x, const float* w, int32_t M, int32_t n, float eps) {
  (void)ctx;
  for (int32_t m = 0; m < M; ++m) {
    const float* xr = x + (size_t)m * (size_t)n;
    float* o = out + (size_t)m * (size_t)n;
    float ss = 0.0f;
    for (int32_t j = 0; j < n; ++j) ss = ss + xr[j] * xr[j];
    const float inv = 1.0f / sqrtf(ss / (float)n + eps);
    for (int32_t j = 0; j < n; ++j) o[j] = (xr[j] * inv) * w[j];
  }
}

void sb_rope(void* ctx, float* x, size_t ldx, int32_t M, int32_t heads, int32_t head_dim, const int32_t* pos,
             const float* cos, const float* sin) {
  (void)ctx;
  const int32_t half = head_dim / 2;
  for (int32_t m = 0; m < M; ++m) {
    const float* c = cos + (size_t)pos[m] * (size_t)half;
    const float* s = sin + (size_t)pos[m] * (size_t)half;
    for (int32_t h = 0; h < heads; ++h) {
      float* v = x + (size_t)m * ldx + (size_t)h * (size_t)head_dim;
      for (int32_t i = 0; i < half; ++i) {
        const float x0 = v[i], x1 = v[i + half];
        v[i] = x0 * c[i] - x1 * s[i];
        v[i + half] = x0 * s[i] + x1 * c[i];
      }
    }
  }
}

void sb_swiglu(void* ctx, float* out, const float* gate, const float* up, int32_t n) {
  (void)ctx;
  for (int32_t j = 0; j < n; ++j) out[j] = (gate[j] / (1.0f + akv_exp(-gate[j]))) * up[j];
}

void sb_add(void* ctx, float* x, const float* y, int32_t n) {
  (void)ctx;
  for (int32_t j = 0; j < n; ++j) x[j] = x[j] + y[j];
}

int sb_block_start_absolute(int32_t p, int32_t pos0, int32_t n_pos) {
  (void)pos0, (void)n_pos;
  return p % SB_KEY_BLOCK == 0;
}

void sb_attention_head(float* out, const float* q, const float* k, const float* v, size_t ldkv, const uint8_t* mask,
                       int32_t n_pos, int32_t pos0, int32_t head_dim, float scale, float* att, float* acc,
                       int (*block_start)(int32_t p, int32_t pos0, int32_t n_pos)) {
  for (int32_t p = 0; p < n_pos; ++p) {
    const float* kp = k + (size_t)p * ldkv;
    float dot = 0.0f;
    for (int32_t i = 0; i < head_dim; ++i) dot = dot + q[i] * kp[i];
    att[p] = (mask != NULL && mask[p] != 0) ? -INFINITY : dot * scale;
  }
  float mx = att[0];
  for (int32_t p = 1; p < n_pos; ++p) mx = mx < att[p] ? att[p] : mx;
  float total = 0.0f, block = 0.0f;
  for (int32_t p = 0; p < n_pos; ++p) {
    if (p > 0 && block_start(p, pos0, n_pos)) total = total + block, block = 0.0f;
    att[p] = akv_exp(att[p] - mx);
    block = block + att[p];
  }
  total = total + block;
  for (int32_t p = 0; p < n_pos; ++p) att[p] = att[p] / total;
  for (int32_t i = 0; i < head_dim; ++i) out[i] = 0.0f, acc[i] = 0.0f;
  for (int32_t p = 0; p < n_pos; ++p) {
    const float* vp = v + (size_t)p * ldkv;
    if (p > 0 && block_start(p, pos0, n_pos))
      for (int32_t i = 0; i < head_dim; ++i) out[i] = out[i] + acc[i], acc[i] = 0.0f;
    for (int32_t i = 0; i < head_dim; ++i) acc[i] = acc[i] + att[p] * vp[i];
  }
  for (int32_t i = 0; i < head_dim; ++i) out[i] = out[i] + acc[i];
}

void sb_attention_blocked(float* out, size_t ldo, const float* q, size_t ldq, const float* k, const float* v,
                          size_t ldkv, const uint8_t* mask, int32_t M, int32_t pos0, int32_t heads, int32_t kv_heads,
                          int32_t head_dim, float scale, float* scratch,
                          int (*block_start)(int32_t p, int32_t pos0, int32_t n_pos)) {
  const int32_t group = heads / kv_heads;
  float* att = scratch;
  float* acc = scratch + pos0 + M;
  for (int32_t m = 0; m < M; ++m)
    for (int32_t h = 0; h < heads; ++h) {
      const size_t kv = (size_t)(h / group) * (size_t)head_dim;
      sb_attention_head(out + (size_t)m * ldo + (size_t)h * (size_t)head_dim,
                        q + (size_t)m * ldq + (size_t)h * (size_t)head_dim, k + kv, v + kv, ldkv, mask, pos0 + m + 1,
                        pos0, head_dim, scale, att, acc, block_start);
    }
}

void sb_attention(void* ctx, float* out, size_t ldo, const float* q, size_t ldq, const float* k, const float* v,
                  size_t ldkv, const uint8_t* mask, int32_t M, int32_t pos0, int32_t heads, int32_t kv_heads,
                  int32_t head_dim, float scale, float* scratch) {
  (void)ctx;
  sb_attention_blocked(out, ldo, q, ldq, k, v, ldkv, mask, M, pos0, heads, kv_heads, head_dim, scale, scratch,
                       sb_block_start_absolute);
}

int32_t sb_evict(void* ctx, const akv_cache_view* cache, int32_t begin, int32_t end) {
  (void)ctx, (void)cache, (void)end;
  return begin;
}
