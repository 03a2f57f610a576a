#include "reference/config.hpp"

#include "reference/error.hpp"

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
}  // namespace

Config config_by_name(const std::string& name) {
  if (name == "tiny") return make("tiny", 32, 2, 4, 2, 64);
  if (name == "small") return make("small", 256, 4, 8, 4, 688);
  // Realistic shape for the benchmarks: head dim 64, GQA 3:1, 50.8M parameters.
  if (name == "bench") return make("bench", 768, 8, 12, 4, 2048);
  throw Error(ErrorCode::kUnknownModel, "unknown model '" + name + "' (expected tiny, small or bench)");
}

std::vector<std::string> config_names() { return {"tiny", "small", "bench"}; }

}  // namespace akv
