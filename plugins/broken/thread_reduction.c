/* Defect: a reduction whose order follows the thread count. Decode attention splits each
 * query's keys into one contiguous split per thread (set_threads), as split-KV kernels size
 * their splits by the workers available; each split's softmax and value sums start from +0 and
 * the splits are added in order. A query's bits then change with the thread count (GT2). The
 * splits run one after another here; on threads the sums, hence the bits, are the same. */
#include "sound_base.h"

static int block_start_per_thread(int32_t p, int32_t pos0, int32_t n_pos) {
  (void)pos0;
  const int32_t t = sb_threads(), split = (n_pos + t - 1) / t;
  return p % split == 0;
}

static void attention(void* ctx, float* out, size_t ldo, const float* q, size_t ldq, const float* k, const float* v,
                      size_t ldkv, const uint8_t* mask, int32_t M, int32_t pos0, int32_t heads, int32_t kv_heads,
                      int32_t head_dim, float scale, float* scratch) {
  (void)ctx;
  sb_attention_blocked(out, ldo, q, ldq, k, v, ldkv, mask, M, pos0, heads, kv_heads, head_dim, scale, scratch,
                       block_start_per_thread);
}

const akv_kernels* akv_get_kernels(void) {
  static const akv_kernels table = SB_TABLE("broken-thread-reduction", .attention = attention);
  return &table;
}
