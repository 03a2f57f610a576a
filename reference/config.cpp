#include "reference/config.hpp"

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
}  // namespace

Config config_by_name(const std::string& name) {
  for (const Named& n : kConfigs)
    if (name == n.name) return make(n.name, n.hidden, n.layers, n.heads, n.kv_heads, n.ffn);
  std::string known;
  for (const Named& n : kConfigs) known += (known.empty() ? "" : ", ") + std::string(n.name);
  throw Error(ErrorCode::kUnknownModel, "unknown model '" + printable(name, 40) + "' (expected one of: " + known + ")");
}

std::vector<std::string> config_names() {
  std::vector<std::string> out;
  for (const Named& n : kConfigs) out.push_back(n.name);
  return out;
}

}  // namespace akv
