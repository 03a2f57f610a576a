// Gemma 3 270M on its real weights (spec/gguf.md F1, C7; spec/model.md M13-M19): the config
// akv reads from the file, and evict == never on one short poisoned conversation. The model is
// fetched by scripts/fetch-model gemma3-270m when missing (the CLI's load does it).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "readers/conversation/chat_parse.hpp"
#include "readers/gguf/dequant.hpp"
#include "readers/gguf/ggml_type.hpp"
#include "readers/gguf/gguf.hpp"
#include "runtime/digest.hpp"
#include "runtime/models.hpp"
#include "verify/witness.hpp"

using namespace akv;

// Q6 on Gemma 3 270M: every tensor (F32, Q8_0, Q5_0, Q4_K, Q6_K) dequantized by akv has the
// SHA-256 of gguf-py's dequantization, written by the setup test real_model_gguf_py_digests_gemma3.
TEST(Q6_GgufPyEquality, EveryTensorOfGemma3) {
  std::ifstream in(AKV_GGUF_PY_DIGESTS_GEMMA);
  ASSERT_TRUE(in) << "no " << AKV_GGUF_PY_DIGESTS_GEMMA << ": run scripts/crosscheck-gguf " << AKV_GGUF_PY_DIGESTS_GEMMA
                  << " gemma3-270m (needs network once)";
  const nlohmann::json d = nlohmann::json::parse(in);
  const readers::GgufFile f = readers::GgufFile::open(d.at("model"));
  const auto& ref = d.at("tensors");
  ASSERT_EQ(f.tensors().size(), 236u);
  ASSERT_EQ(ref.size(), f.tensors().size());
  std::map<std::string, int> by_type;
  for (size_t i = 0; i < f.tensors().size(); ++i) {
    const readers::TensorInfo& t = f.tensors()[i];
    const auto& r = ref[i];
    ASSERT_EQ(std::string(t.name), r.at("name").get<std::string>()) << "tensor " << i;
    EXPECT_EQ(t.dims, r.at("dims").get<std::vector<uint64_t>>()) << t.name;
    EXPECT_EQ(readers::type_name(t.type), r.at("type").get<std::string>()) << t.name;
    const std::vector<float> v = readers::dequantize(t);
    ASSERT_EQ(v.size(), r.at("n_elements").get<uint64_t>()) << t.name;
    EXPECT_EQ(sha256_floats(v), r.at("sha256").get<std::string>())
        << "tensor " << t.name << " (" << readers::type_name(t.type) << ") differs from gguf-py's dequantize";
    ++by_type[readers::type_name(t.type)];
  }
  EXPECT_EQ(by_type, (std::map<std::string, int>{{"F32", 109}, {"Q5_0", 81}, {"Q4_K", 27}, {"Q8_0", 10}, {"Q6_K", 9}}));
}

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
