// akv's float32 weights from a Hugging Face Llama checkpoint (spec/safetensors.md H6): the
// tensor names transformers' LlamaForCausalLM uses, shapes checked against the config.
#pragma once
#include <memory>
#include <string>

#include "readers/hf/hf_checkpoint.hpp"
#include "reference/config.hpp"
#include "reference/model.hpp"
#include "reference/weights.hpp"

namespace akv::readers {

/// The weights of `cfg` (from read_hf_config on the same folder). Tensors (torch shapes, row
/// major, which is akv's M4 layout as is: HF's W_q / W_k rows are already rotate-half, no
/// un-permutation): model.embed_tokens.weight [vocab, hidden];
/// model.layers.L.self_attn.{q,k,v,o}_proj.weight; model.layers.L.mlp.{gate,up,down}_proj.weight;
/// model.layers.L.{input,post_attention}_layernorm.weight [hidden]; model.norm.weight [hidden];
/// lm_head.weight [vocab, hidden] unless cfg.tied_output (then W_cls is a copy of tok_emb, as
/// weights_from_gguf does; an lm_head.weight stored anyway must equal the embedding bit for
/// bit). Each is F32, F16 or BF16 (H3). Throws Error(kBadModel) `FILE: tensor 'NAME'...`
/// naming the tensor when one is missing, has another shape than config.json gives, another
/// dtype, or when the checkpoint holds a tensor this list does not name (a layer past
/// num_hidden_layers, a bias: the config disagrees with the tensors). Memory: the float32
/// weights (4 bytes a parameter); the files stay mapped, not copied.
Weights<float> weights_from_hf(const HfCheckpoint& ckpt, const Config& cfg, const std::string& dir);

/// Reads `dir` (config.json and its safetensors), builds its config (named `name`), weights
/// and RoPE table. Throws Error(kBadModel) as read_hf_config, HfCheckpoint::open and
/// weights_from_hf do.
std::shared_ptr<const Model> load_hf_model(const std::string& dir, const std::string& name);

}  // namespace akv::readers
