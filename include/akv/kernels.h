/* akv kernel ABI, version 1: the model's ops as a C table of functions (spec/gate.md GT1).
 *
 * A kernel library (a plugin) exports one symbol,
 *
 *     const akv_kernels* akv_get_kernels(void);
 *
 * returning a table that lives as long as the library is loaded. akv's forward pass
 * (optimized/composed) calls the ops it provides and the reference ops (spec/model.md) for
 * the rest; `akv gate --kernels LIB.so` checks them (spec/gate.md GT2-GT5).
 *
 * Conventions for every op:
 *   - float is IEEE-754 binary32; row-major layouts; a row stride `ld*` counts floats.
 *   - Heads are contiguous within a row: head h of a row is [h*head_dim, (h+1)*head_dim).
 *   - Sizes are int32_t >= 1 unless said otherwise; pointers are non-NULL unless said otherwise.
 *   - Outputs never alias inputs unless the op says so.
 *   - An op must not keep pointers past its return, and must give every output row the bits it
 *     would get alone (GT2: not dependent on M, the other rows, where a call starts, the thread
 *     count or the scratch contents).
 *   - `ctx` is the table's own `ctx`, passed back unchanged.
 *   - akv calls set_threads and the ops from one thread, never concurrently (thread-local
 *     settings such as omp_set_num_threads apply to the ops).
 *   - Ops return nothing: a kernel that cannot compute (an allocation failed) writes NaN to its
 *     outputs, which every check fails loudly, rather than leaving stale values.
 *   - What must be bitwise, per op, is said at each op ("Bits:") and checked by `akv gate`
 *     (spec/gate.md GT3): a bound where akv's contract leaves an order free, the exact
 *     binary32 operations (IEEE, round to nearest even, no FMA unless named, no fast-math, no
 *     estimate instructions such as rsqrt or rcp) where it does not.
 * Limits of version 1: K/V rows are contiguous (no paged block tables); scratch_floats is not
 * told head_dim or the thread count (size for the worst case).
 */
#ifndef AKV_KERNELS_H
#define AKV_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The ABI version this header declares; a table with another version is refused. */
#define AKV_KERNELS_ABI_VERSION 1u

/** The symbol a kernel library exports. */
#define AKV_KERNELS_SYMBOL "akv_get_kernels"

/** Op bits of akv_kernels.provides: which ops the table implements. */
enum akv_op {
  AKV_OP_MATMUL = 1u << 0,
  AKV_OP_RMSNORM = 1u << 1,
  AKV_OP_ROPE = 1u << 2,
  AKV_OP_ATTENTION = 1u << 3,
  AKV_OP_SWIGLU = 1u << 4,
  AKV_OP_ADD = 1u << 5,
  AKV_OP_EVICT = 1u << 6,
  AKV_OP_ALL = (1u << 7) - 1u
};

/** One layer-major view of a KV cache, for the evict op. Row p of layer l: keys at
 *  k[l] + p * kv_dim, values at v[l] + p * kv_dim, kv_dim = kv_heads * head_dim. Keys are
 *  stored after RoPE at their position. cos/sin: the one RoPE table (max_ctx, head_dim / 2). */
typedef struct akv_cache_view {
  int32_t layers;
  int32_t size;     /* entries held: positions [0, size) */
  int32_t kv_heads;
  int32_t head_dim;
  float* const* k;  /* (layers,) pointers to (size, kv_dim) */
  float* const* v;
  const float* cos;
  const float* sin;
} akv_cache_view;

typedef struct akv_kernels {
  uint32_t abi_version; /* AKV_KERNELS_ABI_VERSION */
  const char* name;     /* short, printable: "openblas-sgemm", "cpu-avx2" */
  uint32_t provides;    /* a set of AKV_OP_* bits; an op whose bit is clear may be NULL */
  void* ctx;            /* passed back to every function */

  /* ---- Threads and scratch (all optional: NULL) */

  /** Sets the number of threads later calls may use (>= 1). Returns 0, or nonzero when the
   *  count is refused. NULL: the table runs single-threaded. */
  int (*set_threads)(void* ctx, int32_t threads);
  /** Floats of scratch the op `op` (one AKV_OP_* bit) needs for a call of these sizes
   *  (matmul: M, n, d; attention: M rows, n = pos0 + M keys, d = heads * head_dim). The
   *  caller passes a buffer of that many floats, with any contents. NULL: no scratch. */
  size_t (*scratch_floats)(void* ctx, uint32_t op, int32_t M, int32_t n, int32_t d);

  /* ---- Matmul (spec/model.md M8) */

  /** Optional: a prepared form of the weight W (d, n) (packing, quantizing ...), made once per
   *  weight and passed to every matmul on it; W stays valid until release_weight. NULL: matmul
   *  receives prepared = NULL. */
  void* (*prepare_weight)(void* ctx, const float* W, int32_t d, int32_t n);
  void (*release_weight)(void* ctx, void* prepared);
  /** Y (M, d) = X (M, n) W^T: Y[m*ldy + j] = sum_k X[m*ldx + k] * W[j*n + k].
   *  W (d, n) row-major; prepared: prepare_weight(W) or NULL; scratch: see scratch_floats.
   *  Bits: any summation order, FMA or not, within B1 of the exact dot product
   *  (spec/bounds.md); no bits are fixed against akv's reference, only invariance (GT2: a
   *  row's bits the same at every M, among any rows, at any thread count and scratch). */
  void (*matmul)(void* ctx, float* Y, size_t ldy, const float* X, size_t ldx, int32_t M, const float* W,
                 const void* prepared, int32_t n, int32_t d, float* scratch);

  /* ---- Row-wise ops */

  /** out (M, n) = RMSNorm of each row of x (M, n) with weight w (n,) and epsilon eps (M7);
   *  out may alias x.
   *  Bits: ss = sum_j x_j * x_j in any order (FMA or not; within 2 B2 of the reference's
   *  output); after ss, exactly these binary32 operations in this order:
   *      mean = ss / (float)n;           a division: ss * (1.0f / n) differs when n is no power of 2
   *      inv  = 1.0f / sqrtf(mean + eps); IEEE sqrt and division, no rsqrt estimate
   *      out_j = (x_j * inv) * w_j;      this association, not x_j * (inv * w_j) or x_j / sqrtf(..)
   *  The gate checks them bitwise on rows whose ss every order gives alike (small integers
   *  times a power of two: GT3.rmsnorm.exact). */
  void (*rmsnorm)(void* ctx, float* out, const float* x, const float* w, int32_t M, int32_t n, float eps);
  /** Rotates x (M, heads * head_dim), row stride ldx, in place: row m at position pos[m], with
   *  the rows pos[m] of the one RoPE table cos/sin ((max_ctx, head_dim / 2), spec/model.md M6).
   *  Rotate-half pairs (i, i + head_dim / 2).
   *  Bits: the reference's, with c = cos[pos[m] * (head_dim / 2) + i], s likewise:
   *      x'_i = x_i * c - x_{i+half} * s;  x'_{i+half} = x_i * s + x_{i+half} * c
   *  two products and one subtraction or addition, each rounded (no FMA), with the table's
   *  values (never a table of one's own). */
  void (*rope)(void* ctx, float* x, size_t ldx, int32_t M, int32_t heads, int32_t head_dim, const int32_t* pos,
               const float* cos, const float* sin);
  /** out (n,) = silu(gate) * up (M10); out may alias gate.
   *  Bits: the reference's, out_j = (g_j / (1.0f + akv_exp(-g_j))) * up_j with akv's exp
   *  (spec/arithmetic.md A4), which <akv/exp.h> gives as a header-only C function; expf or an
   *  approximation gives other bits. */
  void (*swiglu)(void* ctx, float* out, const float* gate, const float* up, int32_t n);
  /** x (n,) += y (n,) (M11). Bits: x_j + y_j, the reference's. */
  void (*add)(void* ctx, float* x, const float* y, int32_t n);

  /* ---- Attention (M9) */

  /** Causal GQA attention of M queries of one sequence at positions pos0 .. pos0 + M - 1:
   *  q (M, heads * head_dim) with row stride ldq, post-RoPE; k, v the cache rows [0, pos0 + M)
   *  (row stride ldkv >= kv_heads * head_dim); query head h reads KV head h / (heads / kv_heads).
   *  Query m attends to keys [0, pos0 + m], scores q.k * scale, skipping every key p with
   *  mask[p] != 0 (mask: NULL or (pos0 + M,) bytes). out (M, heads * head_dim), stride ldo.
   *  scale = 1 / sqrtf(head_dim). Key blocks, if any, are anchored at position 0.
   *  Bits: any order of the score, softmax and value sums and an exp within akv's exp error
   *  (spec/bounds.md B0; <akv/exp.h>'s akv_exp is it), within B14 of the exact value with the
   *  counts of GT3 (spec/gate.md); no bits are fixed against the reference,
   *  only invariance (GT2: a query's bits the same at every M, call start, thread count and
   *  scratch). */
  void (*attention)(void* ctx, float* out, size_t ldo, const float* q, size_t ldq, const float* k, const float* v,
                    size_t ldkv, const uint8_t* mask, int32_t M, int32_t pos0, int32_t heads, int32_t kv_heads,
                    int32_t head_dim, float scale, float* scratch);

  /* ---- Eviction (spec/operations.md O3; optional) */

  /** Edits the cache for the eviction of the entries [begin, end) (0 <= begin < end <= size).
   *  Returns r, begin <= r <= size - (end - begin): afterwards rows [0, r) hold the final
   *  entries of the survivors and akv recomputes the survivors at positions r ... from their
   *  tokens through every layer. The reference edits nothing and returns begin (E1, E3: the
   *  prefix [0, begin) is never written). */
  int32_t (*evict)(void* ctx, const akv_cache_view* cache, int32_t begin, int32_t end);
} akv_kernels;

/** The entry point a kernel library exports (AKV_KERNELS_SYMBOL). */
typedef const akv_kernels* (*akv_get_kernels_fn)(void);

#ifdef __cplusplus
}
#endif

#endif /* AKV_KERNELS_H */
