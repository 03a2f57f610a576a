#include "readers/hf/hf_weights.hpp"

#include <cstring>
#include <set>

#include "readers/gguf/dequant.hpp"
#include "readers/hf/hf_config.hpp"
#include "readers/json_limited.hpp"
#include "reference/error.hpp"

namespace akv::readers {

namespace {

std::string shape_text(const std::vector<uint64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

class Loader {
 public:
  Loader(const HfCheckpoint& c, const std::string& dir) : c_(c), dir_(dir) {}

  // The tensor `name` as float32, checked to have torch shape `shape` (`what` says where the
  // expected sizes come from).
  std::vector<float> load(const std::string& name, std::vector<uint64_t> shape, const char* what) {
    used_.insert(name);
    const FoundTensor f = c_.find(name);
    if (!f.tensor) throw Error(ErrorCode::kBadModel, dir_ + ": tensor " + quoted_name(name) + ": missing");
    if (f.tensor->shape != shape)
      throw Error(ErrorCode::kBadModel, f.file->name() + ": tensor " + quoted_name(name) + ".shape: " + shape_text(f.tensor->shape) +
                                            ", but config.json gives " + shape_text(shape) + " (" + what + ")");
    std::vector<float> v = safetensors_to_float(*f.tensor, f.file->name());
    check_finite(v, shape.back(), f.file->name() + ": tensor " + quoted_name(name));
    return v;
  }

  bool has(const std::string& name) const { return c_.find(name).tensor != nullptr; }

  // Every tensor of the checkpoint was read (or is one transformers derives and akv ignores).
  void check_all_used() const {
    for (const SafetensorsFile& file : c_.files())
      for (const SafeTensor& t : file.tensors()) {
        if (used_.count(t.name)) continue;
        if (t.name.ends_with(".rotary_emb.inv_freq")) continue;  // older transformers saved RoPE's buffer
        throw Error(ErrorCode::kBadModel, file.name() + ": tensor " + quoted_name(t.name) +
                                              ": not part of the llama model config.json describes (config.json disagrees with the tensors)");
      }
  }

 private:
  const HfCheckpoint& c_;
  const std::string& dir_;
  std::set<std::string> used_;
};

}  // namespace

Weights<float> weights_from_hf(const HfCheckpoint& ckpt, const Config& c, const std::string& dir) {
  const auto h = static_cast<uint64_t>(c.hidden), v = static_cast<uint64_t>(c.vocab);
  const auto q = static_cast<uint64_t>(c.q_dim()), kv = static_cast<uint64_t>(c.kv_dim());
  const auto ffn = static_cast<uint64_t>(c.ffn);
  Loader L(ckpt, dir);
  Weights<float> w;
  w.tok_emb = L.load("model.embed_tokens.weight", {v, h}, "vocab_size, hidden_size");
  for (int l = 0; l < c.n_layers; ++l) {
    const std::string b = "model.layers." + std::to_string(l) + ".";
    LayerWeights<float> y;
    y.attn_norm = L.load(b + "input_layernorm.weight", {h}, "hidden_size");
    y.wq = L.load(b + "self_attn.q_proj.weight", {q, h}, "num_attention_heads x head_dim, hidden_size");
    y.wk = L.load(b + "self_attn.k_proj.weight", {kv, h}, "num_key_value_heads x head_dim, hidden_size");
    y.wv = L.load(b + "self_attn.v_proj.weight", {kv, h}, "num_key_value_heads x head_dim, hidden_size");
    y.wo = L.load(b + "self_attn.o_proj.weight", {h, q}, "hidden_size, num_attention_heads x head_dim");
    y.ffn_norm = L.load(b + "post_attention_layernorm.weight", {h}, "hidden_size");
    y.w1 = L.load(b + "mlp.gate_proj.weight", {ffn, h}, "intermediate_size, hidden_size");
    y.w2 = L.load(b + "mlp.down_proj.weight", {h, ffn}, "hidden_size, intermediate_size");
    y.w3 = L.load(b + "mlp.up_proj.weight", {ffn, h}, "intermediate_size, hidden_size");
    w.layers.push_back(std::move(y));
  }
  w.final_norm = L.load("model.norm.weight", {h}, "hidden_size");
  if (!c.tied_output) {
    w.wcls = L.load("lm_head.weight", {v, h}, "vocab_size, hidden_size");
  } else {
    // As weights_from_gguf: W_cls is the embedding itself, wcls stays empty (spec/gguf.md C3).
    if (L.has("lm_head.weight")) {
      const std::vector<float> head = L.load("lm_head.weight", {v, h}, "vocab_size, hidden_size");
      if (std::memcmp(head.data(), w.tok_emb.data(), head.size() * sizeof(float)) != 0)
        throw Error(ErrorCode::kBadModel, dir + ": tensor 'lm_head.weight': differs from model.embed_tokens.weight, "
                                                "but config.json 'tie_word_embeddings' is true (config.json disagrees with the tensors)");
    }
  }
  L.check_all_used();
  return w;
}

std::shared_ptr<const Model> load_hf_model(const std::string& dir, const std::string& name) {
  const Config c = read_hf_config(dir, name);
  const HfCheckpoint ckpt = HfCheckpoint::open(dir);
  auto m = std::make_shared<Model>();
  m->config = c;
  m->weights = weights_from_hf(ckpt, c, dir);
  m->rope = std::make_shared<const RopeTable>(make_rope_table(c.head_dim, c.rope_theta, c.max_ctx));
  return m;
}

}  // namespace akv::readers
