// The config of a llama-arch GGUF file from its metadata (spec/gguf.md C1), on synthetic files;
// the real SmolLM2 file is C2 (tests/real_model/).
#include <gtest/gtest.h>

#include <functional>

#include "tests/support/gguf_builder.hpp"
#include "readers/gguf/gguf_config.hpp"
#include "reference/config.hpp"
#include "reference/error.hpp"

using namespace akv;
using namespace akv::readers;
using akv::test::kv;
using akv::test::kv_str;
using akv::test::TestGguf;

namespace {

// hidden 8, 2 layers, 4 heads / 2 KV heads (head dim 2), FFN 16, vocab 5, context 64.
TestGguf llama_file() {
  TestGguf g;
  g.kvs = {kv_str("general.architecture", "llama"),
           kv<uint32_t>("llama.embedding_length", 4, 8),
           kv<uint32_t>("llama.block_count", 4, 2),
           kv<uint32_t>("llama.feed_forward_length", 4, 16),
           kv<uint32_t>("llama.context_length", 4, 64),
           kv<uint32_t>("llama.attention.head_count", 4, 4),
           kv<uint32_t>("llama.attention.head_count_kv", 4, 2),
           kv<float>("llama.rope.freq_base", 6, 500000.0f),
           kv<float>("llama.attention.layer_norm_rms_epsilon", 6, 1e-6f),
           kv<uint32_t>("llama.vocab_size", 4, 5)};
  g.tensors.push_back({"token_embd.weight", {8, 5}, 0, akv::test::f32_bytes(40)});
  return g;
}

void expect_bad(const TestGguf& g, const std::string& needle) {
  const GgufFile f = GgufFile::parse(g.bytes(), "m.gguf");
  try {
    config_from_gguf(f, "m");
    ADD_FAILURE() << "no error; expected " << needle;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kBadModel);
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what() << "\nexpected: " << needle;
  }
}

TestGguf without(TestGguf g, const std::string& key) {
  std::erase_if(g.kvs, [&](const akv::test::Kv& k) { return k.key == key; });
  return g;
}

TestGguf with(TestGguf g, akv::test::Kv k) {
  g = without(std::move(g), k.key);
  g.kvs.push_back(std::move(k));
  return g;
}

}  // namespace

TEST(C1_ConfigFromGguf, EveryField) {
  const GgufFile f = GgufFile::parse(llama_file().bytes());
  const Config c = config_from_gguf(f, "mini");
  EXPECT_EQ(c.name, "mini");
  EXPECT_EQ(c.hidden, 8);
  EXPECT_EQ(c.n_layers, 2);
  EXPECT_EQ(c.ffn, 16);
  EXPECT_EQ(c.max_ctx, 64);
  EXPECT_EQ(c.n_heads, 4);
  EXPECT_EQ(c.n_kv_heads, 2);
  EXPECT_EQ(c.head_dim, 2);
  EXPECT_EQ(c.vocab, 5);
  EXPECT_EQ(c.rope_theta, 500000.0f);
  EXPECT_EQ(c.rms_eps, 1e-6f);
  EXPECT_TRUE(c.tied_output);
}

TEST(C1_ConfigFromGguf, DefaultsAndAlternatives) {
  // No head_count_kv: MHA; no freq_base: 10000; no vocab_size: the token list's length;
  // an output.weight: untied; key_length gives the head dim; float64 eps is rounded to float.
  TestGguf g = without(without(without(llama_file(), "llama.attention.head_count_kv"), "llama.rope.freq_base"), "llama.vocab_size");
  g = with(g, kv<double>("llama.attention.layer_norm_rms_epsilon", 12, 1e-5));
  g.kvs.push_back({"tokenizer.ggml.tokens", 9, akv::test::array_value(8, 5, akv::test::Writer{}.str("a").str("b").str("c").str("d").str("e").b)});
  g.kvs.push_back(kv<uint32_t>("llama.attention.key_length", 4, 2));
  g.tensors.push_back({"output.weight", {8, 5}, 0, akv::test::f32_bytes(40)});
  const Config c = config_from_gguf(GgufFile::parse(g.bytes()), "alt");
  EXPECT_EQ(c.n_kv_heads, 4);
  EXPECT_EQ(c.rope_theta, 10000.0f);
  EXPECT_EQ(c.vocab, 5);
  EXPECT_EQ(c.head_dim, 2);
  EXPECT_EQ(c.rms_eps, 1e-5f);
  EXPECT_FALSE(c.tied_output);
}

TEST(C1_ConfigFromGguf, SyntheticConfigsStayUntied) {
  for (const auto& n : config_names()) {
    const Config c = config_by_name(n);
    EXPECT_FALSE(c.tied_output) << n;
    EXPECT_EQ(c.rope_theta, 10000.0f) << n;
    EXPECT_EQ(c.vocab, 288) << n;
  }
}

TEST(C1_ConfigFromGguf, Rejections) {
  expect_bad(with(llama_file(), kv_str("general.architecture", "mamba")),
             "metadata 'general.architecture': architecture 'mamba' is not supported (expected llama, qwen2, qwen3 or gemma3)");
  // A supported architecture reads its own keys: a llama-keyed file named qwen2 is refused at
  // the first key of another architecture (C5), never read as llama.
  expect_bad(with(llama_file(), kv_str("general.architecture", "qwen2")),
             "metadata 'llama.embedding_length': not implemented");
  // A string from the file is printed escaped: the message stays one line (F7; a fuzz finding).
  expect_bad(with(llama_file(), kv_str("general.architecture", "qwen\n2")),
             "metadata 'general.architecture': architecture 'qwen\\x0a2' is not supported (expected llama, qwen2, qwen3 or gemma3)");
  expect_bad(without(llama_file(), "general.architecture"), "metadata 'general.architecture': missing");
  expect_bad(without(llama_file(), "llama.block_count"), "metadata 'llama.block_count': missing");
  expect_bad(with(llama_file(), kv_str("llama.block_count", "30")), "metadata 'llama.block_count': expected an integer");
  expect_bad(with(llama_file(), kv<uint32_t>("llama.block_count", 4, 0)), "metadata 'llama.block_count': 0 is out of range");
  expect_bad(with(llama_file(), kv<uint64_t>("llama.context_length", 10, uint64_t{1} << 40)), "metadata 'llama.context_length'");
  // In range for an int, but its RoPE table would take GiBs: refused before any allocation.
  expect_bad(with(llama_file(), kv<uint32_t>("llama.context_length", 4, 1u << 30)),
             "metadata 'llama.context_length': 1073741824 x head dim 2 is more than 2^28 RoPE table entries");
  expect_bad(with(llama_file(), kv<uint32_t>("llama.attention.head_count_kv", 4, 3)),
             "metadata 'llama.attention.head_count_kv': 3 does not divide the head count 4");
  expect_bad(with(without(llama_file(), "llama.attention.head_count_kv"), kv<uint32_t>("llama.attention.head_count", 4, 3)),
             "metadata 'llama.attention.head_count': 3 does not divide the hidden size 8");
  expect_bad(with(llama_file(), kv<uint32_t>("llama.rope.dimension_count", 4, 1)),
             "metadata 'llama.rope.dimension_count': partial rotary");
  expect_bad(with(llama_file(), kv_str("llama.rope.scaling.type", "yarn")), "metadata 'llama.rope.scaling.type'");
  expect_bad(with(llama_file(), kv<uint32_t>("llama.attention.value_length", 4, 4)), "metadata 'llama.attention.value_length'");
  expect_bad(with(llama_file(), kv<float>("llama.attention.layer_norm_rms_epsilon", 6, -1.0f)),
             "metadata 'llama.attention.layer_norm_rms_epsilon': must be finite and > 0");
  expect_bad(with(llama_file(), kv<uint32_t>("llama.vocab_size", 4, 6)),
             "tensor 'token_embd.weight'.dims: [8, 5], expected [8, 6] (hidden, vocab)");
  TestGguf no_emb = llama_file();
  no_emb.tensors.clear();
  expect_bad(no_emb, "tensor 'token_embd.weight': missing");
  TestGguf bad_out = llama_file();
  bad_out.tensors.push_back({"output.weight", {5, 8}, 0, akv::test::f32_bytes(40)});
  expect_bad(bad_out, "tensor 'output.weight'.dims: [5, 8]");
}

// C5: a metadata key that may change the function is implemented or refused, naming it.
TEST(C5_MetadataKeys, KeysThatChangeTheFunctionAreRefused) {
  expect_bad(with(llama_file(), kv<uint32_t>("llama.attention.sliding_window", 4, 4096)),
             "metadata 'llama.attention.sliding_window': a sliding window is implemented for gemma3 only (spec/gguf.md C7)");
  expect_bad(with(llama_file(), kv<float>("llama.attn_logit_softcapping", 6, 50.0f)), "metadata 'llama.attn_logit_softcapping'");
  expect_bad(with(llama_file(), kv<float>("llama.final_logit_softcapping", 6, 30.0f)), "metadata 'llama.final_logit_softcapping'");
  expect_bad(with(llama_file(), kv<float>("llama.rope.scaling.factor", 6, 8.0f)), "metadata 'llama.rope.scaling.factor'");
  expect_bad(with(llama_file(), kv_str("llama.rope.scaling.type", "linear")), "metadata 'llama.rope.scaling.type'");
  expect_bad(with(llama_file(), kv<uint32_t>("llama.expert_count", 4, 8)), "metadata 'llama.expert_count': mixture-of-experts");
  expect_bad(with(llama_file(), kv<bool>("tokenizer.ggml.add_bos_token", 7, true)),
             "metadata 'tokenizer.ggml.add_bos_token': true is not implemented");
  expect_bad(with(llama_file(), kv<bool>("tokenizer.ggml.add_eos_token", 7, true)), "metadata 'tokenizer.ggml.add_eos_token'");
  expect_bad(with(llama_file(), kv_str("tokenizer.ggml.add_bos_token", "yes")), "metadata 'tokenizer.ggml.add_bos_token': expected a bool");
  expect_bad(with(llama_file(), kv_str("tokenizer.huggingface.json", "{}")), "metadata 'tokenizer.huggingface.json'");
  expect_bad(with(llama_file(), kv_str("mystery.key", "x")), "metadata 'mystery.key'");
  // A key from the file is shown on one line, whatever bytes it holds (F7; found by the fuzzer).
  const GgufFile f = GgufFile::parse(with(llama_file(), kv_str("llama.a\nb", "x")).bytes(), "m.gguf");
  try {
    config_from_gguf(f, "m");
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("not implemented"), std::string::npos) << e.what();
  }
}

TEST(C5_MetadataKeys, DescriptiveAndNeutralKeysLoad) {
  TestGguf g = with(with(with(with(llama_file(), kv_str("general.name", "m")), kv<uint32_t>("general.file_type", 4, 3)),
                         kv<bool>("tokenizer.ggml.add_bos_token", 7, false)),
                    kv<uint32_t>("tokenizer.ggml.eos_token_id", 4, 2));
  g = with(with(g, kv<uint32_t>("llama.expert_count", 4, 0)), kv_str("llama.rope.scaling.type", "none"));
  g = with(g, kv_str("quantize.imatrix.file", "x.dat"));
  const GgufFile f = GgufFile::parse(g.bytes(), "m.gguf");
  EXPECT_NO_THROW(config_from_gguf(f, "m"));
}
