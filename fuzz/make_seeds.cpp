// Writes the seed inputs of the model-file fuzz targets (docs/fuzzing.md): small valid GGUF
// files, safetensors files and config.json texts, built with the test suites' writers
// (tests/support/gguf_builder.hpp, tests/support/safetensors_builder.hpp).
//
//   akv_make_fuzz_seeds GGUF_DIR SAFETENSORS_DIR
#include <cstdio>
#include <filesystem>
#include <string>

#include "tests/support/gguf_builder.hpp"
#include "tests/support/safetensors_builder.hpp"

namespace {

using namespace akv::test;

// A llama file of `layers` layers (hidden 8, 2 heads, 1 KV head, FFN 16, vocab 5) whose
// tensors are F32, or F16 / Q8_0 where `mixed`.
TestGguf llama(int layers, bool tied, bool mixed) {
  TestGguf g;
  g.kvs = {kv_str("general.architecture", "llama"), kv<uint32_t>("llama.embedding_length", 4, 8),
           kv<uint32_t>("llama.block_count", 4, static_cast<uint32_t>(layers)), kv<uint32_t>("llama.feed_forward_length", 4, 16),
           kv<uint32_t>("llama.context_length", 4, 32), kv<uint32_t>("llama.attention.head_count", 4, 2),
           kv<uint32_t>("llama.attention.head_count_kv", 4, 1), kv<float>("llama.attention.layer_norm_rms_epsilon", 6, 1e-5f),
           kv<uint32_t>("llama.vocab_size", 4, 5)};
  const auto mat = [&](const std::string& name, uint64_t rows, uint64_t cols) {
    if (mixed && cols % 32 == 0) {  // Q8_0: d (binary16 1.0) + 32 int8 per block
      Writer w;
      for (uint64_t b = 0; b < rows * cols / 32; ++b) {
        w.put<uint16_t>(0x3C00);
        for (int j = 0; j < 32; ++j) w.put<int8_t>(static_cast<int8_t>(j - 16));
      }
      g.tensors.push_back({name, {cols, rows}, 8, w.b});
    } else if (mixed) {
      Writer w;
      for (uint64_t i = 0; i < rows * cols; ++i) w.put<uint16_t>(static_cast<uint16_t>(0x3C00 + i));
      g.tensors.push_back({name, {cols, rows}, 1, w.b});
    } else {
      g.tensors.push_back({name, {cols, rows}, 0, f32_bytes(rows * cols)});
    }
  };
  mat("token_embd.weight", 5, 8);
  for (int l = 0; l < layers; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    g.tensors.push_back({b + "attn_norm.weight", {8}, 0, f32_bytes(8)});
    mat(b + "attn_q.weight", 8, 8);
    mat(b + "attn_k.weight", 4, 8);
    mat(b + "attn_v.weight", 4, 8);
    mat(b + "attn_output.weight", 8, 8);
    g.tensors.push_back({b + "ffn_norm.weight", {8}, 0, f32_bytes(8)});
    mat(b + "ffn_gate.weight", 16, 8);
    mat(b + "ffn_down.weight", 8, 16);
    mat(b + "ffn_up.weight", 16, 8);
  }
  g.tensors.push_back({"output_norm.weight", {8}, 0, f32_bytes(8)});
  if (!tied) mat("output.weight", 5, 8);
  return g;
}

TestSafetensors hf(bool half) {
  TestSafetensors s;
  const auto t = [&](const std::string& name, std::vector<uint64_t> shape) {
    uint64_t n = 1;
    for (uint64_t d : shape) n *= d;
    if (half) s.add(name, "BF16", shape, std::vector<uint8_t>(2 * n, 0x3F));
    else s.add(name, "F32", shape, f32_bytes(n));
  };
  t("model.embed_tokens.weight", {5, 8});
  t("model.layers.0.input_layernorm.weight", {8});
  t("model.layers.0.self_attn.q_proj.weight", {8, 8});
  t("model.layers.0.self_attn.k_proj.weight", {4, 8});
  s.add("model.layers.0.self_attn.v_proj.weight", "F16", {4, 8}, std::vector<uint8_t>(64, 0x3C));
  t("model.norm.weight", {8});
  s.header["__metadata__"] = {{"format", "pt"}};
  return s;
}

const char* kConfig = R"({"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 576,
  "num_hidden_layers": 30, "num_attention_heads": 9, "num_key_value_heads": 3, "head_dim": 64,
  "intermediate_size": 1536, "vocab_size": 49152, "max_position_embeddings": 8192,
  "rms_norm_eps": 9.999999747378752e-06, "rope_parameters": {"rope_theta": 100000.0, "rope_type": "default"},
  "tie_word_embeddings": true, "hidden_act": "silu", "attention_bias": false, "mlp_bias": false,
  "pretraining_tp": 1, "rope_scaling": null})";

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: akv_make_fuzz_seeds GGUF_DIR SAFETENSORS_DIR\n");
    return 2;
  }
  const std::filesystem::path g = argv[1], s = argv[2];
  std::filesystem::create_directories(g);
  std::filesystem::create_directories(s);
  write_file(g / "seed-llama1-f32.gguf", llama(1, false, false).bytes());
  write_file(g / "seed-llama2-tied-mixed.gguf", llama(2, true, true).bytes());
  write_file(s / "seed-f32.safetensors", hf(false).bytes());
  write_file(s / "seed-bf16-padded.safetensors", hf(true).bytes(6));
  write_file(s / "seed-config.json", std::string(kConfig));
  write_file(s / "seed-config-v4.json", std::string(R"({"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2,
    "num_attention_heads": 4, "intermediate_size": 128, "vocab_size": 100, "max_position_embeddings": 256,
    "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "rope_scaling": null})"));
  return 0;
}
