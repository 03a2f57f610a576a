// akv's Config from a Hugging Face transformers `config.json` of a Llama model
// (spec/safetensors.md H5).
#pragma once
#include <string>
#include <string_view>

#include "reference/config.hpp"

namespace akv::readers {

/// The largest config.json akv reads, in bytes.
inline constexpr uint64_t kMaxHfConfigBytes = uint64_t{1} << 20;
/// The largest max_position_embeddings x head_dim: the RoPE table (cos and sin, M6) that
/// load_hf_model builds holds that many floats, 1 GiB at most, whatever the file's size.
inline constexpr uint64_t kMaxHfRopeFloats = uint64_t{1} << 28;

/// The Config of the config.json text `text` (`file` names it in messages; `name` becomes
/// Config::name), read by parse_json_limited: at most kMaxHfConfigBytes, 8 levels deep, no
/// repeated key (H6). model_type must be "llama" (and `architectures`, when present,
/// ["LlamaForCausalLM"]); hidden_size, num_hidden_layers, num_attention_heads,
/// intermediate_size, vocab_size, max_position_embeddings and rms_norm_eps are required;
/// num_key_value_heads, head_dim, rope_theta (or rope_parameters.rope_theta),
/// tie_word_embeddings, hidden_act, rope_scaling, attention_bias, mlp_bias and pretraining_tp
/// are optional with transformers' defaults, and must name what akv runs (silu, no RoPE
/// scaling, no biases, pretraining_tp 1). Sizes are integers in [1, 2^31);
/// max_position_embeddings x head_dim <= kMaxHfRopeFloats. Throws
/// Error(kBadModel) `FILE: 'KEY': problem` for anything else. Whether the tensors
/// agree is checked when they are read (weights_from_hf, H6).
Config config_from_hf_json(std::string_view text, const std::string& file, const std::string& name);

/// Reads `dir`/config.json (at most kMaxHfConfigBytes) and calls config_from_hf_json.
/// Throws Error(kBadModel) naming the path when it cannot be read.
Config read_hf_config(const std::string& dir, const std::string& name);

}  // namespace akv::readers
