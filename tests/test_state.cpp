// The cache state and the backend contract (spec/state.md S1-S4, spec/operations.md O1,
// spec/model.md M4, M11).
#include <gtest/gtest.h>

#include <cstring>

#include "reference/forward.hpp"
#include "support.hpp"
#include "verify/compare.hpp"
#include "runtime/digest.hpp"

using namespace akv;

namespace {

// S2's tiling invariant, checked on any session.
void expect_tiled(const Session& s) {
  size_t at = 0;
  for (const SpanInfo& sp : s.spans()) {
    EXPECT_EQ(sp.start, at);
    EXPECT_GE(sp.length, 1u);
    EXPECT_FALSE(s.is_evicted(sp.id));
    for (size_t i = sp.start; i < sp.start + sp.length; ++i) ASSERT_EQ(s.entry_spans()[i], sp.id);
    at += sp.length;
  }
  EXPECT_EQ(at, s.size());
  EXPECT_EQ(s.tokens().size(), s.size());
  EXPECT_EQ(s.entry_spans().size(), s.size());
}

}  // namespace

TEST(S1_Entries, EntryIIsPositionIWithPostRopeKeys) {
  // The key stored at entry i is W_k·rmsnorm(x) rotated at position i: the first token's
  // layer-0 key at entry 0 is unrotated (position 0), and the same token at entry 5 is the
  // same pre-RoPE key rotated by the table's row 5.
  const auto m = test::tiny();
  const Config& c = m->config;
  std::vector<Token> toks = {65, 1, 2, 3, 4, 65};
  KVCache cache(c);
  std::vector<float> logits(toks.size() * c.vocab);
  auto be = make_reference_backend(m);
  be->forward(cache, toks, logits);
  ASSERT_EQ(cache.size(), 6u);
  std::vector<float> k0(cache.k(0), cache.k(0) + c.kv_dim());
  ref::rope(k0.data(), c.n_kv_heads, c.head_dim, m->rope->cos_at(5), m->rope->sin_at(5));
  EXPECT_EQ(std::memcmp(k0.data(), cache.k(0) + 5 * c.kv_dim(), c.kv_dim() * sizeof(float)), 0);
  // Same token, same position-independent value in layer 0.
  EXPECT_EQ(std::memcmp(cache.v(0), cache.v(0) + 5 * c.kv_dim(), c.kv_dim() * sizeof(float)), 0);
}

TEST(S2_SpanTable, TilesTheCacheThroughAppendsAndEvictions) {
  Session s(test::tiny_reference());
  const int vocab = s.model().config.vocab;
  for (SpanId id = 0; id < 8; ++id) s.append(id, test::tokens(3 + id * 5, static_cast<uint32_t>(id), vocab));
  expect_tiled(s);
  s.append(7, test::tokens(4, 77, vocab));  // decode into the tail span
  expect_tiled(s);
  const SpanId two[] = {5, 2};
  s.evict(two);
  expect_tiled(s);
  s.append(20, test::tokens(6, 20, vocab));
  s.evict(0);
  expect_tiled(s);
  EXPECT_TRUE(s.is_evicted(0) && s.is_evicted(2) && s.is_evicted(5));
  EXPECT_EQ(s.evicted().size(), 3u);
}

TEST(S3_KeptLogits, LastSpanRowAfterEvictingTheTail) {
  // Evicting the last span makes the previous span's kept row the next-token logits; it is
  // the row computed when that span was appended, and equals a never-shown build's logits.
  Session s(test::tiny_reference()), never(test::tiny_reference());
  const int vocab = s.model().config.vocab;
  const auto a = test::tokens(30, 1, vocab), b = test::tokens(20, 2, vocab);
  const auto rows = s.append(1, a);
  s.append(2, b);
  never.append(1, a);
  s.evict(2);
  EXPECT_TRUE(std::equal(s.logits().begin(), s.logits().end(), rows.end() - vocab));
  EXPECT_TRUE(compare(s.logits(), never.logits()).equal());
}

TEST(S4_Digests, CacheDigestLayout) {
  // K rows then V rows, layer by layer, as float32 bytes.
  Session s(test::tiny_reference());
  s.append(1, test::tokens(9, 3, s.model().config.vocab));
  const KVCache& c = s.cache();
  std::vector<float> all;
  for (int l = 0; l < c.n_layers(); ++l) {
    all.insert(all.end(), c.k(l), c.k(l) + c.size() * c.kv_dim());
    all.insert(all.end(), c.v(l), c.v(l) + c.size() * c.kv_dim());
  }
  EXPECT_EQ(cache_sha256(c), sha256_floats(all));
  EXPECT_EQ(cache_prefix_sha256(c, c.size()), cache_sha256(c));
  EXPECT_NE(cache_prefix_sha256(c, 4), cache_sha256(c));
  // Known answer of the SHA-256 itself (FIPS 180-2, "abc").
  const unsigned char abc[] = {'a', 'b', 'c'};
  EXPECT_EQ(sha256_hex(abc), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(S4_Digests, StateDigestSeesEveryPart) {
  Session a(test::tiny_reference()), b(test::tiny_reference());
  a.append(1, std::vector<Token>{1, 2, 3});
  b.append(2, std::vector<Token>{1, 2, 3});  // same tokens and bytes, another span id
  EXPECT_EQ(cache_sha256(a.cache()), cache_sha256(b.cache()));
  EXPECT_NE(session_state_sha256(a), session_state_sha256(b));
}

TEST(O1_Backend, AppendsMEntriesAndLeavesEarlierOnesAlone) {
  const auto m = test::tiny();
  auto be = make_reference_backend(m);
  const Config& c = m->config;
  KVCache cache(c);
  std::vector<float> l1(10 * c.vocab, NAN), l2(7 * c.vocab, NAN);
  const auto t = test::tokens(17, 5, c.vocab);
  be->forward(cache, std::span<const Token>(t).first(10), l1);
  const std::string prefix = cache_sha256(cache);
  be->forward(cache, std::span<const Token>(t).subspan(10), l2);
  EXPECT_EQ(cache.size(), 17u);
  EXPECT_EQ(cache_prefix_sha256(cache, 10), prefix);
  for (float v : l2) ASSERT_FALSE(std::isnan(v));  // every logits row written
}

TEST(M4_WeightShapes, TensorSizes) {
  for (const char* name : {"tiny", "small"}) {
    const Config c = config_by_name(name);
    const auto w = make_synthetic_weights(c, 1);
    EXPECT_EQ(w.tok_emb.size(), size_t(c.vocab) * c.hidden);
    ASSERT_EQ(w.layers.size(), size_t(c.n_layers));
    for (const auto& l : w.layers) {
      EXPECT_EQ(l.wq.size(), size_t(c.q_dim()) * c.hidden);
      EXPECT_EQ(l.wk.size(), size_t(c.kv_dim()) * c.hidden);
      EXPECT_EQ(l.wv.size(), size_t(c.kv_dim()) * c.hidden);
      EXPECT_EQ(l.wo.size(), size_t(c.hidden) * c.q_dim());
      EXPECT_EQ(l.w1.size(), size_t(c.ffn) * c.hidden);
      EXPECT_EQ(l.w3.size(), size_t(c.ffn) * c.hidden);
      EXPECT_EQ(l.w2.size(), size_t(c.hidden) * c.ffn);
      EXPECT_EQ(l.attn_norm.size(), size_t(c.hidden));
      EXPECT_EQ(l.ffn_norm.size(), size_t(c.hidden));
    }
    EXPECT_EQ(w.wcls.size(), size_t(c.vocab) * c.hidden);
  }
}

TEST(M11_Forward, CausalAndLastRowOnly) {
  // Changing token k changes nothing at positions < k and changes row k.
  const auto m = test::tiny();
  auto be = make_reference_backend(m);
  const Config& c = m->config;
  auto t1 = test::tokens(40, 9, c.vocab), t2 = t1;
  t2[25] = (t2[25] + 1) % c.vocab;
  KVCache c1(c), c2(c);
  std::vector<float> l1(40 * c.vocab), l2(40 * c.vocab);
  be->forward(c1, t1, l1);
  be->forward(c2, t2, l2);
  EXPECT_EQ(cache_prefix_sha256(c1, 25), cache_prefix_sha256(c2, 25));
  EXPECT_EQ(std::memcmp(l1.data(), l2.data(), 25 * c.vocab * sizeof(float)), 0);
  EXPECT_NE(std::memcmp(l1.data() + 25 * c.vocab, l2.data() + 25 * c.vocab, c.vocab * sizeof(float)), 0);
  EXPECT_NE(cache_prefix_sha256(c1, 26), cache_prefix_sha256(c2, 26));
}
