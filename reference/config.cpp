#include "reference/config.hpp"

#include <cmath>

#include "reference/error.hpp"
#include "reference/strict.hpp"

namespace akv {

namespace {
Config make(std::string name, int hidden, int layers, int heads, int kv_heads, int ffn) {
  Config c;
  c.name = std::move(name);
  c.vocab = 288;  // 256 bytes + 32 specials (spec/model.md M5)
  c.hidden = hidden;
  c.n_layers = layers;
  c.n_heads = heads;
  c.n_kv_heads = kv_heads;
  c.head_dim = hidden / heads;
  c.ffn = ffn;
  c.max_ctx = 16384;
  return c;
}

// The registry of named configs (spec/model.md M2): config_by_name, config_names and every
// --model help string read this one table.
struct Named {
  const char* name;
  int hidden, layers, heads, kv_heads, ffn;
};
constexpr Named kConfigs[] = {
    {"tiny", 32, 2, 4, 2, 64},
    {"small", 256, 4, 8, 4, 688},
    {"bench", 768, 8, 12, 4, 2048},  // realistic shape for the benchmarks: head dim 64, GQA 3:1, 50.8M parameters
};

// The synthetic variants of the block (spec/model.md M13): tiny's shape with one
// architecture's features, so each feature runs on every backend's tests without a download.
constexpr const char* kVariants[] = {"tiny-qwen2", "tiny-qwen3", "tiny-gemma3", "tiny-llama3"};
}  // namespace

std::vector<float> llama3_rope_factors(int head_dim, float theta, double factor, double low_freq_factor,
                                       double high_freq_factor, double original_max_pos) {
  // As transformers' _compute_llama3_parameters and llama.cpp's converter (rope_freqs.weight):
  // a frequency's wavelength decides: short ones keep it, long ones are divided by `factor`,
  // between them a linear blend of the two; the table divides each frequency by the result.
  const double pi = 3.14159265358979323846;
  const double low_wavelen = original_max_pos / low_freq_factor, high_wavelen = original_max_pos / high_freq_factor;
  std::vector<float> out;
  for (int i = 0; i < head_dim / 2; ++i) {
    const double freq = std::pow(static_cast<double>(theta), -2.0 * i / head_dim);
    const double wavelen = 2 * pi / freq;
    double f = 1.0;
    if (wavelen > low_wavelen) f = factor;
    else if (wavelen >= high_wavelen) {
      const double smooth = (original_max_pos / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor);
      f = 1.0 / ((1.0 - smooth) / factor + smooth);
    }
    out.push_back(static_cast<float>(f));
  }
  return out;
}

void apply_arch(Config& c, const std::string& arch) {
  if (arch == "llama") return;
  if (arch == "qwen2") {
    c.arch = "qwen2", c.qkv_bias = true;
  } else if (arch == "qwen3") {
    c.arch = "qwen3", c.qk_norm = true;
  } else if (arch == "gemma3") {
    c.arch = "gemma3", c.qk_norm = c.post_norms = c.geglu = true;
    c.embed_scale = std::sqrt(static_cast<float>(c.hidden));
  } else {
    throw Error(ErrorCode::kUnknownModel, "architecture '" + printable(arch, 40) + "' is not supported (expected one of: " +
                                              [] { std::string k; for (const auto& a : arch_names()) k += (k.empty() ? "" : ", ") + a; return k; }() + ")");
  }
}

std::string arch_label(const Config& c) {
  std::string s = c.arch;
  if (!c.rope_freq_factors.empty()) s += " (Llama 3 RoPE frequency factors)";
  else if (c.arch == "llama" && c.sliding_window > 0) s += " (sliding window)";
  return s;
}

void require_llama_block(const Config& c, const std::string& backend) {
  if (!c.extended()) return;
  throw Error(ErrorCode::kBackendUnavailable, "backend '" + backend + "' does not run architecture '" + arch_label(c) +
                                                  "' (it runs the llama block only; use --backend cpu or reference)");
}

std::vector<std::string> arch_names() { return {"llama", "qwen2", "qwen3", "gemma3"}; }

Config config_by_name(const std::string& name) {
  for (const Named& n : kConfigs)
    if (name == n.name) return make(n.name, n.hidden, n.layers, n.heads, n.kv_heads, n.ffn);
  for (const char* v : kVariants) {
    if (name != v) continue;
    Config c = make(v, 32, 2, 4, 2, 64);
    const std::string arch = name.substr(5);
    if (arch == "llama3") {
      c.rope_freq_factors = llama3_rope_factors(c.head_dim, c.rope_theta, 8.0, 1.0, 4.0, 64.0);
    } else {
      apply_arch(c, arch);
    }
    if (arch == "gemma3") {  // M19: layer 0 slides (window 64, base 100), layer 1 is global (base 10000)
      c.sliding_window = 64;
      c.sliding_layers = {1, 0};
      c.rope_theta_local = 100.0f;
    }
    return c;
  }
  std::string known;
  for (const std::string& n : config_names()) known += (known.empty() ? "" : ", ") + n;
  throw Error(ErrorCode::kUnknownModel, "unknown model '" + printable(name, 40) + "' (expected one of: " + known + ")");
}

std::vector<std::string> config_names() {
  std::vector<std::string> out;
  for (const Named& n : kConfigs) out.push_back(n.name);
  for (const char* v : kVariants) out.push_back(v);
  return out;
}

}  // namespace akv
