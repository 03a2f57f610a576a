// The model's definition (spec/model.md M1-M4): configs, the weight PRNG, golden digests of
// the synthetic weights and the RoPE table, so a change of numerics fails loudly.
#include <gtest/gtest.h>

#include <cstring>

#include "reference/error.hpp"
#include "reference/model.hpp"
#include "reference/prng.hpp"
#include "runtime/digest.hpp"

using namespace akv;

namespace {
// Golden digests, also printed in spec/model.md M3 and M6 for auditors.
constexpr const char* TINY_SEED1_SHA = "68ac2bd79aa1a9e7747a5046d71abfcb4ccd9d79e6cf012d18f41b6c96bf9f43";
constexpr const char* SMALL_SEED1_SHA = "eec9ba3b1b92cb2893117f671dd31e935bd52abfd1ce43caf1164ef8c8ebabb7";
constexpr const char* ROPE_TINY_SHA =
    "62b7e113137dad02d91a8fd4ac491ef5a35fad9ab9a2c86442c0e67195da052a"
    "762d928cbbccd48b6b0fabbcbc11a27c492e44375f8d84609ed362330e96881a";

std::string weights_sha256(const Weights<float>& w) {
  std::vector<float> all(w.tok_emb);
  for (const auto& l : w.layers)
    for (const auto* t : {&l.attn_norm, &l.wq, &l.wk, &l.wv, &l.wo, &l.ffn_norm, &l.w1, &l.w2, &l.w3})
      all.insert(all.end(), t->begin(), t->end());
  all.insert(all.end(), w.final_norm.begin(), w.final_norm.end());
  all.insert(all.end(), w.wcls.begin(), w.wcls.end());
  return sha256_floats(all);
}
}  // namespace

TEST(M2_Configs, NamedShapes) {
  const Config t = config_by_name("tiny");
  EXPECT_EQ(t.hidden, 32);
  EXPECT_EQ(t.n_layers, 2);
  EXPECT_EQ(t.n_heads, 4);
  EXPECT_EQ(t.n_kv_heads, 2);
  EXPECT_EQ(t.head_dim, 8);
  EXPECT_EQ(t.ffn, 64);
  const Config s = config_by_name("small");
  EXPECT_EQ(s.hidden, 256);
  EXPECT_EQ(s.n_layers, 4);
  EXPECT_EQ(s.n_heads, 8);
  EXPECT_EQ(s.n_kv_heads, 4);
  EXPECT_EQ(s.ffn, 688);
  for (const auto& name : config_names()) {
    const Config c = config_by_name(name);
    EXPECT_GE(c.vocab, 288) << name;
    EXPECT_GE(c.max_ctx, 16384) << name;
    EXPECT_EQ(c.hidden, c.n_heads * c.head_dim) << name;
    EXPECT_EQ(c.n_heads % c.n_kv_heads, 0) << name;
    EXPECT_EQ(c.head_dim % 2, 0) << name;
  }
}

TEST(M2_Configs, UnknownNameIsATypedError) {
  try {
    config_by_name("huge");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnknownModel);
    EXPECT_NE(std::string(e.what()).find("huge"), std::string::npos);
  }
}

TEST(M3_WeightPrng, SplitMix64KnownAnswers) {
  // Vigna's reference splitmix64.c, seeded with 1234567.
  SplitMix64 g{1234567};
  EXPECT_EQ(g.next(), 6457827717110365317ull);
  EXPECT_EQ(g.next(), 3203168211198807973ull);
  EXPECT_EQ(g.next(), 9817491932198370423ull);
  EXPECT_EQ(g.next(), 4593380528125082431ull);
  EXPECT_EQ(g.next(), 16408922859458223821ull);
}

TEST(M3_WeightPrng, UniformIsExactTopBits) {
  SplitMix64 a{42}, b{42};
  for (int i = 0; i < 1000; ++i) {
    const uint64_t z = b.next();
    const float u = a.uniform();
    EXPECT_EQ(u, static_cast<float>(static_cast<int64_t>(z >> 40) - (1 << 23)) / 8388608.0f);
    EXPECT_GE(u, -1.0f);
    EXPECT_LT(u, 1.0f);
  }
}

TEST(M3_WeightPrng, GoldenDigests) {
  // Changing the PRNG, a scale or the tensor order changes these: update spec/model.md M3 too.
  EXPECT_EQ(weights_sha256(make_synthetic_weights(config_by_name("tiny"), 1)), TINY_SEED1_SHA);
  EXPECT_EQ(weights_sha256(make_synthetic_weights(config_by_name("small"), 1)), SMALL_SEED1_SHA);
}

TEST(M3_WeightPrng, SeedsAndTensorsAreIndependentStreams) {
  const auto a = make_synthetic_weights(config_by_name("tiny"), 1);
  const auto b = make_synthetic_weights(config_by_name("tiny"), 2);
  EXPECT_NE(a.tok_emb, b.tok_emb);
  EXPECT_NE(a.layers[0].wq, a.layers[0].wk);  // same shape class, different streams
  EXPECT_NE(a.layers[0].attn_norm, a.layers[1].attn_norm);
}

TEST(M6_RoPE, GoldenTableDigest) {
  const RopeTable t = make_rope_table(8, 10000.0f, 16384);
  const size_t n = 16384 * 4;
  EXPECT_EQ(sha256_floats({t.cos_rows(16384), n}) + sha256_floats({t.sin_rows(16384), n}), ROPE_TINY_SHA);
}

// M6: rows are computed when first read, in blocks, and each equals the formula whatever
// order they were filled in; a table claiming 2^24 positions costs only the rows read.
TEST(M6_RoPE, RowsAreComputedWhenFirstReadWithTheSameBits) {
  const RopeTable lazy = make_rope_table(16, 10000.0f, 1 << 24);
  EXPECT_EQ(lazy.rows_computed(), 0);
  const float* far = lazy.cos_at(9000);  // fills blocks [0, 12288)
  EXPECT_EQ(lazy.rows_computed(), 3 * RopeTable::kBlock);
  const RopeTable eager = make_rope_table(16, 10000.0f, 12288);
  const float* all = eager.cos_rows(12288);
  EXPECT_EQ(std::memcmp(far, all + 9000 * 8, 8 * sizeof(float)), 0);
  EXPECT_EQ(std::memcmp(lazy.sin_rows(12288), eager.sin_rows(12288), 12288 * 8 * sizeof(float)), 0);
  EXPECT_EQ(lazy.cos_at(9000), far) << "rows never move once computed";
  // The last row of a short table: blocks stop at max_pos.
  const RopeTable shorter = make_rope_table(8, 10000.0f, 10);
  shorter.sin_at(9);
  EXPECT_EQ(shorter.rows_computed(), 10);
}
