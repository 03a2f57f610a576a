/* The sound base of the broken-kernel catalog: a plain C implementation of every op of
 * include/akv/kernels.h that is invariant (spec/gate.md GT2) and accurate (GT3). Each
 * broken kernel of this folder is this base with one op replaced by a small edit of it.
 *
 * Arithmetic, per op (every reduction fixed by the data's indices alone, never by M, the
 * call's start, the thread count or the scratch contents):
 *   matmul     one FMA chain per output, k in order from +0; threads split the outputs;
 *   rmsnorm    the reference's operations (spec/model.md M7);
 *   rope       the reference's operations on the one table (M6, no FMA);
 *   swiglu     (g / (1 + exp(-g))) * u with akv's exp (A4), add x + y: the reference's;
 *   attention  scores and softmax as M9; the softmax sum and the weighted sum of values in
 *              key blocks of SB_KEY_BLOCK anchored at position 0 (each block summed from +0,
 *              the block sums added in order);
 *   evict      edits nothing, returns begin (the reference's, O3).
 */
#ifndef AKV_SOUND_BASE_H
#define AKV_SOUND_BASE_H

#include <akv/kernels.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Keys per block of the attention sums; blocks start at multiples of it (absolute positions). */
#define SB_KEY_BLOCK 16

/** The ops the base provides: all of them. */
#define SB_PROVIDES ((uint32_t)AKV_OP_ALL)

/** The base's table named NAME, with the ops given after it in place of the base's, as
 *  designated initializers: SB_TABLE("broken-x", .swiglu = swiglu). The later designator
 *  initialises the field (the C standard's rule for initializer lists; the override is the point, so -Woverride-init is off
 *  for the catalog). A new op of the ABI is added to the catalog here and in sound_base.c only. */
#define SB_TABLE(NAME, ...)                                                                                \
  {                                                                                                        \
    .abi_version = AKV_KERNELS_ABI_VERSION, .name = NAME, .provides = SB_PROVIDES,                         \
    .set_threads = sb_set_threads, .scratch_floats = sb_scratch_floats, .matmul = sb_matmul,               \
    .rmsnorm = sb_rmsnorm, .rope = sb_rope, .swiglu = sb_swiglu, .add = sb_add, .attention = sb_attention, \
    .evict = sb_evict, __VA_ARGS__                                                                         \
  }

/** The threads later calls may use (set_threads stores it; 1 until then). */
int32_t sb_threads(void);

/** Runs fn(arg, begin, end) over [0, count) split into sb_threads() contiguous ranges, one a
 *  thread (the caller runs the first); returns when all are done. */
void sb_parallel(int32_t count, void (*fn)(void* arg, int32_t begin, int32_t end), void* arg);

/* The base's ops, with the signatures of akv_kernels (include/akv/kernels.h). */
int sb_set_threads(void* ctx, int32_t threads);
size_t sb_scratch_floats(void* ctx, uint32_t op, int32_t M, int32_t n, int32_t d);
void sb_matmul(void* ctx, float* Y, size_t ldy, const float* X, size_t ldx, int32_t M, const float* W,
               const void* prepared, int32_t n, int32_t d, float* scratch);
void sb_rmsnorm(void* ctx, float* out, const float* x, const float* w, int32_t M, int32_t n, float eps);
void sb_rope(void* ctx, float* x, size_t ldx, int32_t M, int32_t heads, int32_t head_dim, const int32_t* pos,
             const float* cos, const float* sin);
void sb_swiglu(void* ctx, float* out, const float* gate, const float* up, int32_t n);
void sb_add(void* ctx, float* x, const float* y, int32_t n);
void sb_attention(void* ctx, float* out, size_t ldo, const float* q, size_t ldq, const float* k, const float* v,
                  size_t ldkv, const uint8_t* mask, int32_t M, int32_t pos0, int32_t heads, int32_t kv_heads,
                  int32_t head_dim, float scale, float* scratch);
int32_t sb_evict(void* ctx, const akv_cache_view* cache, int32_t begin, int32_t end);

/** One query head over keys [0, n_pos) (M9), the sums in key blocks whose boundaries are the
 *  positions p with block_start(p, pos0, n_pos) != 0. att: scratch (n_pos,); acc: scratch (head_dim,). */
void sb_attention_head(float* out, const float* q, const float* k, const float* v, size_t ldkv, const uint8_t* mask,
                       int32_t n_pos, int32_t pos0, int32_t head_dim, float scale, float* att, float* acc,
                       int (*block_start)(int32_t p, int32_t pos0, int32_t n_pos));

/** sb_attention with the key blocks' boundaries at the positions p where block_start(p, pos0,
 *  n_pos) != 0: every query row and head through sb_attention_head, att and acc in scratch
 *  (scratch_floats' attention size). A defect in the blocks passes its own block_start. */
void sb_attention_blocked(float* out, size_t ldo, const float* q, size_t ldq, const float* k, const float* v,
                          size_t ldkv, const uint8_t* mask, int32_t M, int32_t pos0, int32_t heads, int32_t kv_heads,
                          int32_t head_dim, float scale, float* scratch,
                          int (*block_start)(int32_t p, int32_t pos0, int32_t n_pos));

/** The base's block boundaries: multiples of SB_KEY_BLOCK in absolute position (GT2). */
int sb_block_start_absolute(int32_t p, int32_t pos0, int32_t n_pos);

#ifdef __cplusplus
}
#endif

#endif
