/* Defect: a decode path of its own that sums in another order. One decode token (M == 1) at
 * head_dim 128, past the first 64 keys, with two or more threads, splits its keys in two halves,
 * each half's softmax and value sums from +0 and the halves added, as split-KV decode kernels do
 * to give every thread work on one token (akv's cpu kernels take such a path there too, with
 * the same bits, K4). Every call on the path gets the same bits and every other call the base's,
 * so only a decode compared with its own prefill, on that path, shows it (GT2: attention
 * decode). AKV_BROKEN_DECODE_PATH=HD:first|past:T moves the defect to another path (head dim HD,
 * a decode in the first 64 keys or past them, at exactly T threads), for the catch rate per path
 * of scripts/gate-catalog --paths. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sound_base.h"

typedef struct {
  int32_t head_dim; /* the path: this head dim */
  int past;         /* a decode past the first 64 keys (1) or in them (0) */
  int32_t threads;  /* at exactly this many threads; 0: at two or more */
} decode_path;

static decode_path the_path(void) {
  decode_path p = {128, 1, 0};
  const char* e = getenv("AKV_BROKEN_DECODE_PATH");
  char where[8] = {0};
  int hd = 0, t = 0;
  if (e != NULL && sscanf(e, "%d:%7[a-z]:%d", &hd, where, &t) == 3 && hd > 0 && t > 0 &&
      (strcmp(where, "first") == 0 || strcmp(where, "past") == 0)) {
    p.head_dim = hd, p.past = strcmp(where, "past") == 0, p.threads = t;
  }
  return p;
}

static int block_start_halves(int32_t p, int32_t pos0, int32_t n_pos) {
  (void)pos0;
  return p % SB_KEY_BLOCK == 0 || p == ((n_pos / 2) | 1); /* odd: never a block's start */
}

static void attention(void* ctx, float* out, size_t ldo, const float* q, size_t ldq, const float* k, const float* v,
                      size_t ldkv, const uint8_t* mask, int32_t M, int32_t pos0, int32_t heads, int32_t kv_heads,
                      int32_t head_dim, float scale, float* scratch) {
  (void)ctx;
  const decode_path p = the_path();
  const int on_path = M == 1 && head_dim == p.head_dim && (pos0 >= 64) == p.past &&
                      (p.threads == 0 ? sb_threads() >= 2 : sb_threads() == p.threads);
  sb_attention_blocked(out, ldo, q, ldq, k, v, ldkv, mask, M, pos0, heads, kv_heads, head_dim, scale, scratch,
                       on_path ? block_start_halves : sb_block_start_absolute);
}

const akv_kernels* akv_get_kernels(void) {
  static const akv_kernels table = SB_TABLE("broken-split-decode-path", .attention = attention);
  return &table;
}
