// Gemma 3 270M on its real weights (spec/gguf.md F1, C7; spec/model.md M13-M19): the config
// akv reads from the file, and evict == never on one short poisoned conversation. The model is
// fetched by scripts/fetch-model gemma3-270m when missing (the CLI's load does it).
#include <gtest/gtest.h>

#include <cmath>

#include "readers/conversation/chat_parse.hpp"
#include "verify/models.hpp"
#include "verify/witness.hpp"

using namespace akv;

TEST(C7_GgufArchitectures, RealGemma3Config) {
  const LoadedModel m = load_model("gemma3-270m");
  const Config& c = m.model->config;
  EXPECT_EQ(c.arch, "gemma3");
  EXPECT_EQ(c.vocab, 262144);
  EXPECT_EQ(c.hidden, 640);
  EXPECT_EQ(c.n_layers, 18);
  EXPECT_EQ(c.n_heads, 4);
  EXPECT_EQ(c.n_kv_heads, 1);
  EXPECT_EQ(c.head_dim, 256);  // != hidden / heads
  EXPECT_EQ(c.ffn, 2048);
  EXPECT_EQ(c.sliding_window, 512);
  EXPECT_EQ(c.rope_theta, 1000000.0f);
  EXPECT_EQ(c.rope_theta_local, 10000.0f);
  ASSERT_EQ(c.sliding_layers.size(), 18u);
  for (int l = 0; l < 18; ++l) EXPECT_EQ(c.sliding(l), (l + 1) % 6 != 0) << l;
  EXPECT_TRUE(c.qk_norm && c.post_norms && c.geglu && !c.qkv_bias);
  EXPECT_EQ(c.embed_scale, static_cast<float>(std::sqrt(640.0)));
  EXPECT_TRUE(c.tied_output);
  ASSERT_NE(m.model->rope_local, nullptr);
  EXPECT_EQ(m.encoder->name(), "gemma");
}

TEST(M19_SlidingWindow, RealGemma3EvictIsExact) {
  WitnessOptions o;
  o.model = "gemma3-270m";
  const WitnessReport r = run_witness(load_conversation(std::string(AKV_SOURCE_DIR) + "/examples/conversations/ad01_banking_ut0_gpt4omini.json"), o);
  EXPECT_TRUE(r.passed());
  EXPECT_EQ(r.evict_vs_never_max_abs, 0.0f);
  EXPECT_GT(r.poison_vs_never_max_abs, 0.0f);
  EXPECT_GT(r.tokens_poisoned, 512u) << "the conversation must pass the 512-token window";
  EXPECT_EQ(r.cache_sha256_evicted, r.cache_sha256_never);
  EXPECT_TRUE(r.cross_config_identical) << r.cross_config_diff;
}
