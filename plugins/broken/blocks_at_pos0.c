/* Defect: attention key blocks anchored at the call's start (pos0) instead of position 0.
 * The tiles of the softmax and value sums start where the call's queries start, so the same
 * query gets other block sums in a prefill chunk than in decode (GT2: where a call starts). */
#include "sound_base.h"

static int block_start_at_call(int32_t p, int32_t pos0, int32_t n_pos) {
  (void)n_pos;
  return (p - pos0) % SB_KEY_BLOCK == 0;
}

static void attention(void* ctx, float* out, size_t ldo, const float* q, size_t ldq, const float* k, const float* v,
                      size_t ldkv, const uint8_t* mask, int32_t M, int32_t pos0, int32_t heads, int32_t kv_heads,
                      int32_t head_dim, float scale, float* scratch) {
  (void)ctx;
  sb_attention_blocked(out, ldo, q, ldq, k, v, ldkv, mask, M, pos0, heads, kv_heads, head_dim, scale, scratch,
                       block_start_at_call);
}

const akv_kernels* akv_get_kernels(void) {
  static const akv_kernels table = SB_TABLE("broken-blocks-at-pos0", .attention = attention);
  return &table;
}
