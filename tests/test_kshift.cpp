// Why survivors must be recomputed (spec/theorems.md E5): cutting an interior
// span out and re-rotating the survivors' keys to their new positions (llama.cpp's K-shift,
// StreamingLLM) is exact for layer 0 only. Deeper layers' K/V already carry the span.
#include <gtest/gtest.h>

#include <cstring>

#include "reference/forward.hpp"
#include "reference/ops.hpp"
#include "support.hpp"
#include "verify/compare.hpp"

using namespace akv;
using akv::test::spans_of;
using akv::test::tiny;

namespace {

// Rotates one head vector x (head_dim,) from position `from` to position `to` with the one
// table: R(to) R(from)^-1 x. The best a K-shift can do without the pre-RoPE key.
void rerotate(float* x, int head_dim, const RopeTable& t, int from, int to) {
  const int half = head_dim / 2;
  for (int i = 0; i < half; ++i) {  // inverse rotation: angle -a
    const float c = t.cos_at(from)[i], s = t.sin_at(from)[i];
    const float x0 = x[i], x1 = x[i + half];
    x[i] = x0 * c + x1 * s;
    x[i + half] = x1 * c - x0 * s;
  }
  ref::rope(x, 1, head_dim, t.cos_at(to), t.sin_at(to));
}

// Layer 0's K of a token at `pos`, from the pre-RoPE key (no attention involved).
void layer0_key(const Model& m, Token tok, int pos, float* out) {
  const Config& c = m.config;
  std::vector<float> x(m.weights.tok_emb.begin() + static_cast<size_t>(tok) * c.hidden,
                       m.weights.tok_emb.begin() + static_cast<size_t>(tok + 1) * c.hidden);
  std::vector<float> xb(c.hidden);
  ref::rmsnorm(xb.data(), x.data(), m.weights.layers[0].attn_norm.data(), c.hidden, c.rms_eps);
  ref::matmul(out, xb.data(), m.weights.layers[0].wk.data(), c.hidden, c.kv_dim());
  ref::rope(out, c.n_kv_heads, c.head_dim, m.rope->cos_at(pos), m.rope->sin_at(pos));
}

}  // namespace

TEST(E5_ShiftWithoutRecompute, IsNotExactButEvictIs) {
  const auto spans = spans_of("ad02_slack_ut16_claude35.json");
  const auto model = tiny();
  const Config& c = model->config;
  Backend* be = &akv::test::tiny_reference();
  Session poisoned = akv::test::built("ad02_slack_ut16_claude35.json");
  const Session never = akv::test::built("ad02_slack_ut16_claude35.json", {3});
  const size_t cut = poisoned.spans()[3].start, gap = poisoned.spans()[3].length;
  const size_t n = poisoned.size() - gap;

  // The K-shift cache: prefix as is; survivors moved down by `gap`, keys re-rotated,
  // values copied; layer 0's keys redone from the pre-RoPE key with the same table.
  KVCache shifted(c);
  shifted.grow(n);
  const size_t kvd = c.kv_dim();
  for (int l = 0; l < c.n_layers; ++l) {
    for (size_t p = 0; p < n; ++p) {
      const size_t src = p < cut ? p : p + gap;
      std::memcpy(shifted.k(l) + p * kvd, poisoned.cache().k(l) + src * kvd, kvd * sizeof(float));
      std::memcpy(shifted.v(l) + p * kvd, poisoned.cache().v(l) + src * kvd, kvd * sizeof(float));
      if (p < cut) continue;
      if (l == 0) {
        layer0_key(*model, poisoned.tokens()[src], static_cast<int>(p), shifted.k(0) + p * kvd);
      } else {
        for (int h = 0; h < c.n_kv_heads; ++h)
          rerotate(shifted.k(l) + p * kvd + h * c.head_dim, c.head_dim, *model->rope, static_cast<int>(src),
                   static_cast<int>(p));
      }
    }
  }
  const size_t bytes = n * kvd * sizeof(float);
  // Layer 0 is exact: its K depends on the token and the position alone, its V on the token.
  EXPECT_EQ(std::memcmp(shifted.k(0), never.cache().k(0), bytes), 0);
  EXPECT_EQ(std::memcmp(shifted.v(0), never.cache().v(0), bytes), 0);
  // Deeper layers are not: the survivors attended to the span when they were computed.
  EXPECT_NE(std::memcmp(shifted.v(1), never.cache().v(1), bytes), 0);

  // Every logit produced next differs on the K-shift cache...
  const std::vector<Token> next = spans[0];
  KVCache never_cache = never.cache();
  std::vector<float> l_shift(next.size() * c.vocab), l_never(next.size() * c.vocab);
  be->forward(shifted, next, l_shift);
  be->forward(never_cache, next, l_never);
  const Diff shift = compare(l_shift, l_never);
  EXPECT_TRUE(shift.comparable() && !shift.same_bytes);
  EXPECT_GT(shift.max_abs, 0.0f);

  // ...and is bitwise equal after akv's evict (truncate + recompute).
  poisoned.evict(3);
  KVCache evicted_cache = poisoned.cache();
  std::vector<float> l_evict(next.size() * c.vocab);
  be->forward(evicted_cache, next, l_evict);
  const Diff ev = compare(l_evict, l_never);
  EXPECT_TRUE(ev.equal());
  EXPECT_EQ(ev.max_abs, 0.0f);
}
