// Model configurations (spec/model.md M1, M2).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace akv {

using Token = int32_t;

/// A Llama-architecture decoder's shape. All sizes are element counts.
struct Config {
  std::string name;
  int vocab = 0;       // token ids [0, vocab)
  int hidden = 0;      // residual width d
  int n_layers = 0;
  int n_heads = 0;     // query heads
  int n_kv_heads = 0;  // key/value heads (GQA: n_heads % n_kv_heads == 0)
  int head_dim = 0;    // hidden == n_heads * head_dim
  int ffn = 0;         // SwiGLU inner width
  int max_ctx = 0;     // largest cache size in tokens
  float rope_theta = 10000.0f;
  float rms_eps = 1e-5f;
  float qk_gain = 2.0f;  // scale of W_q, W_k init (spec/model.md M3): keeps attention non-uniform
  bool tied_output = false;  // logits use tok_emb as W_cls (real models, spec/gguf.md C1); synthetic: false

  int kv_dim() const { return n_kv_heads * head_dim; }
  int q_dim() const { return n_heads * head_dim; }
};

/// The named configs: "tiny", "small" and "bench" (spec/model.md M2).
/// Throws Error(kUnknownModel) for any other name.
Config config_by_name(const std::string& name);

/// Names accepted by config_by_name, in a stable order.
std::vector<std::string> config_names();

}  // namespace akv
