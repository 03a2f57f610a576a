// Model configurations (spec/model.md M1, M2).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace akv {

using Token = int32_t;

/// A decoder's shape and block variant (spec/model.md M1, M13-M19). All sizes are element
/// counts. The llama block is the default; each other architecture is a set of the feature
/// flags below (M13 lists which), every flag false/zero giving the llama block exactly.
struct Config {
  std::string name;
  std::string arch = "llama";  // "llama", "qwen2", "qwen3", "gemma3": the name errors and listings print
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
  // Block features (spec/model.md M14-M19); all off is the llama block of M11.
  bool qkv_bias = false;    // M14: b_q, b_k, b_v added after the Q/K/V matmuls (Qwen2)
  bool qk_norm = false;     // M15: RMSNorm over each head of q and k before RoPE (Qwen3, Gemma 3)
  bool post_norms = false;  // M16: RMSNorm of each block's output before its residual add (Gemma 3)
  bool geglu = false;       // M17: the FFN gate is tanh-GELU (GeGLU) instead of SiLU (Gemma 3)
  float embed_scale = 0.0f; // M18: 0 none, else the embedding row times this float (Gemma 3: fl(sqrt(hidden)))
  int sliding_window = 0;   // M19: 0 none, else a sliding layer's query at p sees keys (p - window, p]
  std::vector<uint8_t> sliding_layers;  // M19: (n_layers,) 1 = a sliding-window layer; empty = none
  float rope_theta_local = 0.0f;        // M19: RoPE base of the sliding layers (0: rope_theta)
  std::vector<float> rope_freq_factors; // M20: (head_dim/2,) divisors of each RoPE frequency (Llama 3 scaling); empty = none

  /// Layer l attends within a sliding window (M19).
  bool sliding(int l) const { return sliding_window > 0 && !sliding_layers.empty() && sliding_layers[static_cast<size_t>(l)] != 0; }
  /// Any feature beyond the llama block of M11: backends that run only that block refuse it.
  bool extended() const {
    return qkv_bias || qk_norm || post_norms || geglu || embed_scale != 0.0f || sliding_window > 0 || !rope_freq_factors.empty();
  }

  int kv_dim() const { return n_kv_heads * head_dim; }
  int q_dim() const { return n_heads * head_dim; }
};

/// The named configs: "tiny", "small" and "bench" (spec/model.md M2).
/// Throws Error(kUnknownModel) for any other name.
Config config_by_name(const std::string& name);

/// Names accepted by config_by_name, in a stable order: tiny, small, bench and the synthetic
/// block variants tiny-qwen2, tiny-qwen3, tiny-gemma3, tiny-llama3 (spec/model.md M13).
std::vector<std::string> config_names();

/// Sets the block features of architecture `arch` on c (spec/model.md M13): "llama" none,
/// "qwen2" QKV bias, "qwen3" QK-norm, "gemma3" QK-norm, post-norms, GeGLU and the embedding
/// scale fl(sqrt(hidden)) (its sliding window and local RoPE base come from the file).
/// Error(kUnknownModel) naming any other architecture.
void apply_arch(Config& c, const std::string& arch);

/// The architecture as errors name it: c.arch, plus " (Llama 3 RoPE frequency factors)" or
/// " (sliding window)" when those are set on a block that is otherwise llama's.
std::string arch_label(const Config& c);

/// Error(kBackendUnavailable) "backend 'B' does not run architecture 'A' ..." when c uses a
/// block feature (Config::extended) that `backend`, which runs the llama block only, lacks.
void require_llama_block(const Config& c, const std::string& backend);

/// The architectures apply_arch knows, in a stable order.
std::vector<std::string> arch_names();

/// Llama 3's RoPE frequency divisors (spec/model.md M20), (head_dim/2,): for frequency
/// f_i = theta^(-2i/hd) (double) of wavelength w = 2pi/f_i: 1 when w < original/high, `factor`
/// when w > original/low, else 1/((1-s)/factor + s) with s = (original/w - low)/(high - low);
/// each rounded once to float. As transformers' llama3 rope_type and llama.cpp's rope_freqs.
std::vector<float> llama3_rope_factors(int head_dim, float theta, double factor, double low_freq_factor,
                                       double high_freq_factor, double original_max_pos);

}  // namespace akv
