// Every model by name or path: the one place that turns `--model X` into weights and a chat
// encoder (spec/model.md M2 for the synthetic ones, spec/gguf.md F1 and C1 for real files).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "reference/chat_encoder.hpp"
#include "reference/model.hpp"

namespace akv {

/// A model ready to run: weights and RoPE table, and how conversations become its tokens.
struct LoadedModel {
  std::shared_ptr<const Model> model;
  std::shared_ptr<const ChatEncoder> encoder;
  std::string name;    // as reports print it: "small", "smollm2", or the file's path
  std::string source;  // "synthetic, seed 1" or the file read
  bool real = false;   // loaded from a file (seed unused)
  uint64_t seed = 1;   // the weight seed of a synthetic model
};

/// The name of akv's default real model (SmolLM2-135M-Instruct, Q4_1 GGUF; spec/gguf.md F1).
inline constexpr const char* kDefaultRealModel = "smollm2";

/// Names `--model` accepts besides a path: the synthetic configs (with the block variants
/// tiny-qwen2, tiny-qwen3, tiny-gemma3, tiny-llama3), then the real models "smollm2", "gemma3-270m".
std::vector<std::string> model_names();

/// Every form `--model` accepts, for help and docs: model_names(), then "PATH.gguf" (a GGUF
/// file), "HF-FOLDER" (a Hugging Face model folder) and "synthetic:SPEC" (a synthetic shape,
/// spec/model.md M12), the forms load_model() resolves.
std::vector<std::string> model_forms();

/// Resolves `spec`:
///   "tiny" | "small" | "bench"  the synthetic model (M3) with weight seed `seed`, fixture encoder;
///   "synthetic:hidden=..,..."   a synthetic model of that shape (spec/model.md M12), the same way;
///                               a malformed one is Error(kBadInput) naming the field;
///   "smollm2", "gemma3-270m"    the cached real model file (fetched with scripts/fetch-model NAME
///                               when missing): BPE + ChatML, SentencePiece + Gemma turns (spec/tokenizer.md);
///   a path ending in ".gguf"    that GGUF file (llama, qwen2, qwen3, gemma3), its own tokenizer and template;
///   a folder                    a Hugging Face model (config.json + safetensors, spec/safetensors.md)
///                               with its tokenizer.json and tokenizer_config.json's chat template.
/// Throws Error(kUnknownModel) for any other name (listing the names), Error(kBadModel) for
/// a file that is missing, malformed or unsupported, naming it and the field.
LoadedModel load_model(const std::string& spec, uint64_t seed = 1);

/// The path of the cached default real model: $AKV_MODELS, else $XDG_CACHE_HOME/akv/models,
/// else $HOME/.cache/akv/models, + "/SmolLM2-135M-Instruct.Q4_1.gguf" (spec/gguf.md F1).
std::string default_real_model_path();

/// The cached file of real model `name` (smollm2, gemma3-270m; scripts/fetch-model NAME), which
/// may not exist yet. Error(kUnknownModel) for another name.
std::string real_model_path(const std::string& name);

}  // namespace akv
