#include "model/gguf_weights.hpp"

#include <algorithm>

#include "model/dequant.hpp"
#include "model/gguf_config.hpp"
#include "reference/error.hpp"

namespace akv::model {

namespace {

// The tensor `name` as float32, checked to have ggml dims `dims` ([n] or [n, d] for W (d, n)).
std::vector<float> load(const GgufFile& f, const std::string& name, std::vector<uint64_t> dims) {
  const TensorInfo* t = f.find_tensor(name);
  if (!t) throw Error(ErrorCode::kBadModel, f.name() + ": tensor '" + name + "': missing");
  if (t->dims != dims) {
    auto text = [](const std::vector<uint64_t>& d) {
      std::string s = "[";
      for (size_t i = 0; i < d.size(); ++i) s += (i ? ", " : "") + std::to_string(d[i]);
      return s + "]";
    };
    throw Error(ErrorCode::kBadModel, f.name() + ": tensor '" + name + "'.dims: " + text(t->dims) + ", expected " + text(dims));
  }
  return dequantize(*t);
}

// Undoes the converter's Q/K row permutation (C3), head by head; rows of `n` floats.
std::vector<float> unpermute(const std::vector<float>& w, int rows, int n, int head_dim) {
  std::vector<float> out(w.size());
  for (int r = 0; r < rows; ++r) {
    const int head = r / head_dim;
    const int src = head * head_dim + gguf_qk_source_row(r % head_dim, head_dim);
    std::copy_n(w.begin() + static_cast<ptrdiff_t>(src) * n, n, out.begin() + static_cast<ptrdiff_t>(r) * n);
  }
  return out;
}

}  // namespace

int gguf_qk_source_row(int r, int head_dim) {
  const int half = head_dim / 2;
  return 2 * (r % half) + r / half;
}

Weights<float> weights_from_gguf(const GgufFile& f, const Config& c) {
  const auto h = static_cast<uint64_t>(c.hidden), v = static_cast<uint64_t>(c.vocab);
  const auto q = static_cast<uint64_t>(c.q_dim()), kv = static_cast<uint64_t>(c.kv_dim());
  const auto ffn = static_cast<uint64_t>(c.ffn);
  Weights<float> w;
  w.tok_emb = load(f, "token_embd.weight", {h, v});
  for (int l = 0; l < c.n_layers; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    LayerWeights<float> L;
    L.attn_norm = load(f, b + "attn_norm.weight", {h});
    L.wq = unpermute(load(f, b + "attn_q.weight", {h, q}), c.q_dim(), c.hidden, c.head_dim);
    L.wk = unpermute(load(f, b + "attn_k.weight", {h, kv}), c.kv_dim(), c.hidden, c.head_dim);
    L.wv = load(f, b + "attn_v.weight", {h, kv});
    L.wo = load(f, b + "attn_output.weight", {q, h});
    L.ffn_norm = load(f, b + "ffn_norm.weight", {h});
    L.w1 = load(f, b + "ffn_gate.weight", {h, ffn});
    L.w2 = load(f, b + "ffn_down.weight", {ffn, h});
    L.w3 = load(f, b + "ffn_up.weight", {h, ffn});
    w.layers.push_back(std::move(L));
  }
  w.final_norm = load(f, "output_norm.weight", {h});
  if (!c.tied_output) w.wcls = load(f, "output.weight", {h, v});  // tied: classifier() reads tok_emb
  return w;
}

std::shared_ptr<const Model> load_gguf_model(const std::string& path, const std::string& name) {
  return load_gguf_model(GgufFile::open(path), name);
}

std::shared_ptr<const Model> load_gguf_model(const GgufFile& f, const std::string& name) {
  const Config c = config_from_gguf(f, name);
  auto m = std::make_shared<Model>();
  m->config = c;
  m->weights = weights_from_gguf(f, c);
  m->rope = std::make_shared<const RopeTable>(make_rope_table(c.head_dim, c.rope_theta, c.max_ctx));
  return m;
}

}  // namespace akv::model
