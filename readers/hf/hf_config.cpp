#include "readers/hf/hf_config.hpp"

#include <cmath>
#include <limits>

#include "readers/json_limited.hpp"
#include "readers/mapped_file.hpp"
#include "reference/error.hpp"

namespace akv::readers {

using json = nlohmann::json;

namespace {

class Fields {
 public:
  Fields(const json& j, const std::string& file) : j_(j), file_(file) {}

  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    throw Error(ErrorCode::kBadModel, file_ + ": '" + key + "': " + what);
  }

  // The value of `key`, or nullptr when absent or null.
  const json* find(const std::string& key) const {
    const auto it = j_.find(key);
    return it == j_.end() || it->is_null() ? nullptr : &*it;
  }

  int size(const std::string& key) const {
    const json* v = find(key);
    if (!v) fail(key, "missing");
    return size_value(key, *v);
  }
  int size_or(const std::string& key, int fallback) const {
    const json* v = find(key);
    return v ? size_value(key, *v) : fallback;
  }
  int size_value(const std::string& key, const json& v) const {
    if (!v.is_number_unsigned()) fail(key, std::string("expected an integer, got ") + json_kind(v));
    const uint64_t x = v.get<uint64_t>();
    if (x < 1 || x > static_cast<uint64_t>(std::numeric_limits<int32_t>::max()))
      fail(key, std::to_string(x) + " is out of range [1, 2^31)");
    return static_cast<int>(x);
  }

  // A positive finite number, rounded to the nearest float (and still finite and > 0).
  float positive(const std::string& key, const json& v) const {
    if (!v.is_number()) fail(key, std::string("expected a number, got ") + json_kind(v));
    const float f = static_cast<float>(v.get<double>());
    if (!(f > 0.0f) || std::isinf(f)) fail(key, v.dump() + " is not a finite number > 0 in float32");
    return f;
  }

  bool boolean_or(const std::string& key, bool fallback) const {
    const json* v = find(key);
    if (!v) return fallback;
    if (!v->is_boolean()) fail(key, std::string("expected true or false, got ") + json_kind(*v));
    return v->get<bool>();
  }

  // `key`, when present, must be `want` (a setting akv has one value for).
  void must_be(const std::string& key, const json& want, const std::string& why) const {
    const json* v = find(key);
    if (v && *v != want) fail(key, v->dump().substr(0, 80) + " is not supported (" + why + ")");
  }

 private:
  const json& j_;
  const std::string& file_;
};

// rope_theta: transformers 4.x writes it at the top level (with rope_scaling null);
// 5.x writes rope_parameters {rope_type: "default", rope_theta}. Both: they must agree.
float rope_theta(const Fields& f) {
  std::optional<float> theta;
  if (const json* t = f.find("rope_theta")) theta = f.positive("rope_theta", *t);
  for (const char* block : {"rope_parameters", "rope_scaling"}) {
    const json* p = f.find(block);
    if (!p) continue;
    if (!p->is_object()) f.fail(block, std::string("expected an object or null, got ") + json_kind(*p));
    for (const auto& [k, v] : p->items()) {
      const std::string key = std::string(block) + "." + k;
      if (k == "rope_type" || k == "type") {
        if (v != "default") f.fail(key, v.dump().substr(0, 80) + " is not supported (akv runs default RoPE, no scaling)");
      } else if (k == "rope_theta") {
        const float t = f.positive(key, v);
        if (theta && *theta != t) f.fail(key, v.dump() + " disagrees with rope_theta");
        theta = t;
      } else {
        f.fail(key, "not supported (akv runs default RoPE: rope_type and rope_theta only)");
      }
    }
  }
  return theta.value_or(10000.0f);  // transformers' LlamaConfig default
}

}  // namespace

Config config_from_hf_json(std::string_view text, const std::string& file, const std::string& name) {
  constexpr JsonLimits kConfigJson{kMaxHfConfigBytes, 8, "spec/safetensors.md H6"};
  const json j = parse_json_limited(text, kConfigJson, {ErrorCode::kBadModel, file + ": config.json"});
  if (!j.is_object()) throw Error(ErrorCode::kBadModel, file + ": config.json: expected a JSON object, got " + json_kind(j));
  const Fields f(j, file);

  const json* mt = f.find("model_type");
  if (!mt) f.fail("model_type", "missing (akv reads llama)");
  if (*mt != "llama") f.fail("model_type", mt->dump().substr(0, 80) + " is not supported (expected \"llama\")");
  if (const json* a = f.find("architectures"); a && *a != json::array({"LlamaForCausalLM"}))
    f.fail("architectures", a->dump().substr(0, 80) + " is not supported (expected [\"LlamaForCausalLM\"])");
  f.must_be("hidden_act", "silu", "akv's FFN is SwiGLU with SiLU");
  f.must_be("attention_bias", false, "akv's projections have no bias");
  f.must_be("mlp_bias", false, "akv's projections have no bias");
  f.must_be("pretraining_tp", 1, "akv runs each projection as one matmul");
  if (const json* p = f.find("partial_rotary_factor"); p && *p != 1 && *p != 1.0)
    f.fail("partial_rotary_factor", p->dump().substr(0, 80) + " is not supported (akv rotates the whole head)");

  Config c;
  c.name = name;
  c.hidden = f.size("hidden_size");
  c.n_layers = f.size("num_hidden_layers");
  c.n_heads = f.size("num_attention_heads");
  c.n_kv_heads = f.size_or("num_key_value_heads", c.n_heads);
  c.ffn = f.size("intermediate_size");
  c.vocab = f.size("vocab_size");
  c.max_ctx = f.size("max_position_embeddings");
  if (c.n_heads % c.n_kv_heads != 0)
    f.fail("num_key_value_heads", std::to_string(c.n_kv_heads) + " does not divide num_attention_heads " + std::to_string(c.n_heads));
  if (!f.find("head_dim") && c.hidden % c.n_heads != 0)
    f.fail("num_attention_heads", std::to_string(c.n_heads) + " does not divide hidden_size " + std::to_string(c.hidden));
  c.head_dim = f.size_or("head_dim", c.hidden / c.n_heads);
  if (c.head_dim % 2 != 0) f.fail("head_dim", std::to_string(c.head_dim) + " is odd (RoPE rotates pairs)");
  if (static_cast<int64_t>(c.n_heads) * c.head_dim > std::numeric_limits<int32_t>::max())
    f.fail("head_dim", "num_attention_heads x head_dim is out of range [1, 2^31)");
  if (static_cast<uint64_t>(c.max_ctx) * static_cast<uint64_t>(c.head_dim) > kMaxHfRopeFloats)
    f.fail("max_position_embeddings", std::to_string(c.max_ctx) + " x head_dim " + std::to_string(c.head_dim) +
                                          " is more than 2^28 RoPE table entries (1 GiB)");
  c.rope_theta = rope_theta(f);
  const json* eps = f.find("rms_norm_eps");
  if (!eps) f.fail("rms_norm_eps", "missing");
  c.rms_eps = f.positive("rms_norm_eps", *eps);
  c.tied_output = f.boolean_or("tie_word_embeddings", false);  // LlamaConfig's default
  return c;
}

Config read_hf_config(const std::string& dir, const std::string& name) {
  const std::string path = dir + "/config.json";
  const auto bytes = map_file(path);  // its size is checked by config_from_hf_json (H6)
  return config_from_hf_json({reinterpret_cast<const char*>(bytes->data()), bytes->size()}, path, name);
}

}  // namespace akv::readers
