// akv's Config from a transformers config.json (spec/safetensors.md H6): both the 4.x form
// (rope_theta, rope_scaling) and the 5.x form (rope_parameters), defaults, and every field
// that is missing, mistyped, out of range or names something akv does not run.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "readers/hf/hf_config.hpp"
#include "reference/error.hpp"
#include "tests/support/safetensors_builder.hpp"

using namespace akv;
using namespace akv::readers;
using json = nlohmann::json;

namespace {

// SmolLM2-135M-Instruct's config.json as transformers 5 writes it (save_pretrained).
json smollm2() {
  return json::parse(R"({
    "architectures": ["LlamaForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
    "bos_token_id": 1, "dtype": "float32", "eos_token_id": 2, "head_dim": 64, "hidden_act": "silu",
    "hidden_size": 576, "initializer_range": 0.02, "intermediate_size": 1536,
    "max_position_embeddings": 8192, "mlp_bias": false, "model_type": "llama",
    "num_attention_heads": 9, "num_hidden_layers": 30, "num_key_value_heads": 3, "pad_token_id": 2,
    "pretraining_tp": 1, "rms_norm_eps": 9.999999747378752e-06,
    "rope_parameters": {"rope_theta": 100000.0, "rope_type": "default"},
    "tie_word_embeddings": true, "transformers_version": "5.24.0", "unk_token_id": 0,
    "use_cache": true, "vocab_size": 49152})");
}

Config parse(const json& j) { return config_from_hf_json(j.dump(), "m/config.json", "m"); }

void expect_bad(const std::string& text, const std::string& needle) {
  try {
    config_from_hf_json(text, "m/config.json", "m");
    ADD_FAILURE() << "accepted; expected bad_model with: " << needle;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kBadModel) << e.what();
    EXPECT_NE(std::string(e.what()).find("m/config.json: " + needle), std::string::npos) << "message: " << e.what() << "\nexpected: " << needle;
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
  }
}

void expect_bad(const std::function<void(json&)>& edit, const std::string& needle) {
  json j = smollm2();
  edit(j);
  expect_bad(j.dump(), needle);
}

}  // namespace

TEST(H6_HfConfig, SmolLM2FromTransformers5) {
  const Config c = parse(smollm2());
  EXPECT_EQ(c.name, "m");
  EXPECT_EQ(c.hidden, 576);
  EXPECT_EQ(c.n_layers, 30);
  EXPECT_EQ(c.n_heads, 9);
  EXPECT_EQ(c.n_kv_heads, 3);
  EXPECT_EQ(c.head_dim, 64);
  EXPECT_EQ(c.ffn, 1536);
  EXPECT_EQ(c.vocab, 49152);
  EXPECT_EQ(c.max_ctx, 8192);
  EXPECT_EQ(c.rope_theta, 100000.0f);
  EXPECT_EQ(c.rms_eps, 1e-5f);  // the double 9.999999747378752e-06 is float 1e-5 exactly
  EXPECT_TRUE(c.tied_output);
}

TEST(H6_HfConfig, Transformers4FormAndDefaults) {
  json j = smollm2();
  j.erase("rope_parameters");
  j["rope_theta"] = 500000;
  j["rope_scaling"] = nullptr;
  for (const char* k : {"architectures", "head_dim", "num_key_value_heads", "tie_word_embeddings", "hidden_act", "attention_bias",
                        "mlp_bias", "pretraining_tp"})
    j.erase(k);
  j["num_attention_heads"] = 8;
  const Config c = parse(j);
  EXPECT_EQ(c.rope_theta, 500000.0f);
  EXPECT_EQ(c.n_kv_heads, 8);     // default: num_attention_heads
  EXPECT_EQ(c.head_dim, 72);      // default: hidden_size / num_attention_heads
  EXPECT_FALSE(c.tied_output);    // LlamaConfig's default
  j.erase("rope_theta");
  EXPECT_EQ(parse(j).rope_theta, 10000.0f);  // LlamaConfig's default
  j["rope_theta"] = 1e4;
  j["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 10000}};  // both, agreeing
  EXPECT_EQ(parse(j).rope_theta, 10000.0f);
  j["num_key_value_heads"] = nullptr;  // null is absent
  EXPECT_EQ(parse(j).n_kv_heads, 8);
}

TEST(H6_HfConfig, MissingFieldsAreNamed) {
  for (const char* k : {"model_type", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size", "vocab_size",
                        "max_position_embeddings", "rms_norm_eps"})
    expect_bad([&](json& j) { j.erase(k); }, std::string("'") + k + "': missing");
}

TEST(H6_HfConfig, WrongValuesAreNamed) {
  expect_bad("{\"hidden_size\": ", "config.json: not valid JSON");
  expect_bad("[1, 2]", "config.json: expected a JSON object, got an array");
  expect_bad("{\"a\": 1, \"a\": 2}", "config.json: key 'a' repeated in one object");
  expect_bad([](json& j) { j["model_type"] = "mistral"; }, "'model_type': \"mistral\" is not supported (expected \"llama\")");
  expect_bad([](json& j) { j["architectures"] = {"MistralForCausalLM"}; }, "'architectures': [\"MistralForCausalLM\"] is not supported");
  expect_bad([](json& j) { j["hidden_act"] = "gelu"; }, "'hidden_act': \"gelu\" is not supported");
  expect_bad([](json& j) { j["attention_bias"] = true; }, "'attention_bias': true is not supported");
  expect_bad([](json& j) { j["mlp_bias"] = true; }, "'mlp_bias': true is not supported");
  expect_bad([](json& j) { j["pretraining_tp"] = 2; }, "'pretraining_tp': 2 is not supported");
  expect_bad([](json& j) { j["partial_rotary_factor"] = 0.5; }, "'partial_rotary_factor': 0.5 is not supported");
  expect_bad([](json& j) { j["rope_parameters"]["rope_type"] = "llama3"; }, "'rope_parameters.rope_type': \"llama3\" is not supported");
  expect_bad([](json& j) { j["rope_parameters"]["factor"] = 8.0; }, "'rope_parameters.factor': not supported");
  expect_bad([](json& j) { j["rope_scaling"] = {{"type", "linear"}, {"factor", 2.0}}; }, "'rope_scaling.factor': not supported");
  expect_bad([](json& j) { j["rope_scaling"] = {{"type", "linear"}}; }, "'rope_scaling.type': \"linear\" is not supported");
  expect_bad([](json& j) { j["rope_parameters"] = "default"; }, "'rope_parameters': expected an object or null, got a string");
  expect_bad([](json& j) { j["rope_theta"] = 10000.0; }, "'rope_parameters.rope_theta': 100000.0 disagrees with rope_theta");
  expect_bad([](json& j) { j["rope_parameters"]["rope_theta"] = -1; }, "'rope_parameters.rope_theta': -1 is not a finite number > 0");
  expect_bad([](json& j) { j["rope_parameters"]["rope_theta"] = 1e300; }, "'rope_parameters.rope_theta': 1e+300 is not a finite number > 0 in float32");
  expect_bad([](json& j) { j["rms_norm_eps"] = 0; }, "'rms_norm_eps': 0 is not a finite number > 0");
  expect_bad([](json& j) { j["rms_norm_eps"] = "1e-5"; }, "'rms_norm_eps': expected a number, got a string");
  expect_bad([](json& j) { j["hidden_size"] = -576; }, "'hidden_size': expected an integer, got a negative integer");
  expect_bad([](json& j) { j["hidden_size"] = 576.5; }, "'hidden_size': expected an integer, got a non-integer number");
  expect_bad([](json& j) { j["hidden_size"] = "576"; }, "'hidden_size': expected an integer, got a string");
  expect_bad([](json& j) { j["vocab_size"] = 0; }, "'vocab_size': 0 is out of range [1, 2^31)");
  expect_bad([](json& j) { j["num_hidden_layers"] = uint64_t{1} << 31; }, "'num_hidden_layers': 2147483648 is out of range [1, 2^31)");
  expect_bad([](json& j) { j["num_key_value_heads"] = 2; }, "'num_key_value_heads': 2 does not divide num_attention_heads 9");
  expect_bad([](json& j) { j.erase("head_dim"); j["num_attention_heads"] = 7; j["num_key_value_heads"] = 7; },
             "'num_attention_heads': 7 does not divide hidden_size 576");
  expect_bad([](json& j) { j["head_dim"] = 63; }, "'head_dim': 63 is odd");
  expect_bad([](json& j) { j["head_dim"] = 1 << 30; }, "'head_dim': num_attention_heads x head_dim is out of range");
  expect_bad([](json& j) { j["max_position_embeddings"] = (1 << 22) + 1; }, "'max_position_embeddings': 4194305 x head_dim 64 is more than 2^28 RoPE table entries");
  expect_bad([](json& j) { j["tie_word_embeddings"] = 1; }, "'tie_word_embeddings': expected true or false, got an integer");
}

TEST(H6_HfConfig, ReadFromAFolder) {
  const auto dir = akv::test::fresh_dir("h6_config");
  akv::test::write_file(dir / "config.json", smollm2().dump(2));
  EXPECT_EQ(read_hf_config(dir.string(), "s").n_layers, 30);
  akv::test::write_file(dir / "config.json", std::string(kMaxHfConfigBytes + 1, ' '));
  try {
    read_hf_config(dir.string(), "s");
    ADD_FAILURE() << "a 1 MiB + 1 config.json was read";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("config.json: config.json: 1048577 bytes, more than the limit"), std::string::npos) << e.what();
  }
  std::filesystem::remove(dir / "config.json");
  try {
    read_hf_config(dir.string(), "s");
    ADD_FAILURE() << "no config.json, yet read";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kBadModel);
    EXPECT_NE(std::string(e.what()).find("config.json"), std::string::npos) << e.what();
  }
  std::filesystem::remove_all(dir);
}
