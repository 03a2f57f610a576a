#include "readers/gguf/gguf_weights.hpp"

#include <algorithm>
#include <set>

#include "readers/gguf/dequant.hpp"
#include "readers/gguf/gguf_config.hpp"
#include "readers/json_limited.hpp"
#include "reference/error.hpp"

namespace akv::readers {

namespace {

// The tensor `name` as float32, checked to have ggml dims `dims` ([n] or [n, d] for W (d, n))
// and finite values (F8); `used` records it (C4).
std::vector<float> load(const GgufFile& f, const std::string& name, std::vector<uint64_t> dims, std::set<std::string>& used) {
  used.insert(name);
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
  std::vector<float> v = dequantize(*t, f.name());
  check_finite(v, dims[0], f.name() + ": tensor '" + name + "'");
  return v;
}

// The tensor `name` (W (d, n), ggml dims [n, d]) as the file stores it: dims checked as load(),
// a type akv dequantizes, every value finite (F8, checked in pieces of rows, nothing kept).
StoredMatrix stored(const GgufFile& f, const std::string& name, std::vector<uint64_t> dims, std::set<std::string>& used,
                    int qk_head_dim) {
  used.insert(name);
  const TensorInfo* t = f.find_tensor(name);
  if (!t) throw Error(ErrorCode::kBadModel, f.name() + ": tensor '" + name + "': missing");
  if (t->dims != dims) (void)load(f, name, dims, used);  // throws, naming the dims
  const std::string what = f.name() + ": tensor '" + name + "'";
  if (!dequantize_supported(t->type)) (void)dequantize(*t, f.name());  // throws, naming the type
  StoredMatrix m;
  m.type = t->type;
  m.cols = static_cast<int>(dims[0]);
  m.rows = static_cast<int>(dims[1]);
  m.data = t->data;
  m.row_bytes = t->n_bytes / dims[1];
  m.qk_head_dim = qk_head_dim;
  constexpr size_t kPiece = size_t{1} << 16;  // elements dequantized at a time for F8
  const size_t rows_per = std::max<size_t>(1, kPiece / dims[0]);
  std::vector<float> buf(rows_per * dims[0]);
  for (size_t r = 0; r < dims[1]; r += rows_per) {
    const size_t nr = std::min<size_t>(rows_per, dims[1] - r);
    std::span<float> out(buf.data(), nr * dims[0]);
    dequantize(t->type, {t->data + r * m.row_bytes, nr * m.row_bytes}, out, what);
    check_finite(out, dims[0], what, r * dims[0]);
  }
  return m;
}

void dequantize_stored(uint32_t type, const uint8_t* in, size_t n, float* out) {
  const TypeLayout* l = type_layout(type);
  dequantize(type, {in, n / l->block * l->bytes}, {out, n}, "stored weights");
}

// C4: every tensor of the file is one the model reads, or the file is refused, naming it: a
// tensor akv skipped (a bias, a layer past block_count) would make akv compute
// another function than the file's own runtime, silently.
void check_all_used(const GgufFile& f, const std::set<std::string>& used, const Config& c) {
  for (const TensorInfo& t : f.tensors()) {
    const std::string name(t.name);
    if (used.count(name)) continue;
    std::string why = "not part of the llama model akv runs (spec/gguf.md C4)";
    if (name.ends_with(".bias")) why = "a bias is not part of akv's " + c.arch + " block";
    else if (name.starts_with("blk.")) {
      const size_t dot = name.find('.', 4);
      const std::string layer = name.substr(4, dot == std::string::npos ? std::string::npos : dot - 4);
      if (!layer.empty() && layer.find_first_not_of("0123456789") == std::string::npos && layer.size() < 10 &&
          std::stoll(layer) >= c.n_layers)
        why = "layer " + layer + " is past llama.block_count (" + std::to_string(c.n_layers) + ")";
    }
    throw Error(ErrorCode::kBadModel,
                f.name() + ": tensor " + quoted_name(name) + ": " + why + "; akv refuses a file with a tensor it would ignore");
  }
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

// The block variants' vectors of layer prefix `b` (float32 in every mode: they are small):
// QKV biases (M14), QK-norms (M15), post-norms (M16), each only under its Config feature.
void load_vectors(const GgufFile& f, const Config& c, LayerWeights<float>& L, const std::string& b, std::set<std::string>& used) {
  const auto h = static_cast<uint64_t>(c.hidden), q = static_cast<uint64_t>(c.q_dim());
  const auto kv = static_cast<uint64_t>(c.kv_dim()), hd = static_cast<uint64_t>(c.head_dim);
  if (c.qkv_bias) {
    L.bq = load(f, b + "attn_q.bias", {q}, used), L.bk = load(f, b + "attn_k.bias", {kv}, used);
    L.bv = load(f, b + "attn_v.bias", {kv}, used);
  }
  if (c.qk_norm) L.q_norm = load(f, b + "attn_q_norm.weight", {hd}, used), L.k_norm = load(f, b + "attn_k_norm.weight", {hd}, used);
  if (c.post_norms) {
    L.post_attn_norm = load(f, b + "post_attention_norm.weight", {h}, used);
    L.post_ffn_norm = load(f, b + "post_ffw_norm.weight", {h}, used);
  }
}

}  // namespace

int gguf_qk_source_row(int r, int head_dim) { return qk_source_row(r, head_dim); }

Weights<float> weights_from_gguf(const GgufFile& f, const Config& c) {
  const auto h = static_cast<uint64_t>(c.hidden), v = static_cast<uint64_t>(c.vocab);
  const auto q = static_cast<uint64_t>(c.q_dim()), kv = static_cast<uint64_t>(c.kv_dim());
  const auto ffn = static_cast<uint64_t>(c.ffn);
  Weights<float> w;
  std::set<std::string> used;
  const auto load = [&](const std::string& name, std::vector<uint64_t> dims) { return akv::readers::load(f, name, std::move(dims), used); };
  w.tok_emb = load("token_embd.weight", {h, v});
  for (int l = 0; l < c.n_layers; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    LayerWeights<float> L;
    L.attn_norm = load(b + "attn_norm.weight", {h});
    // C3: llama.cpp's converter permutes Q/K rows for the llama architecture only; qwen2, qwen3
    // and gemma3 run rotate-half (NEOX) RoPE and keep Hugging Face's row order.
    L.wq = load(b + "attn_q.weight", {h, q});
    L.wk = load(b + "attn_k.weight", {h, kv});
    if (c.arch == "llama") {
      L.wq = unpermute(L.wq, c.q_dim(), c.hidden, c.head_dim);
      L.wk = unpermute(L.wk, c.kv_dim(), c.hidden, c.head_dim);
    }
    L.wv = load(b + "attn_v.weight", {h, kv});
    L.wo = load(b + "attn_output.weight", {q, h});
    L.ffn_norm = load(b + "ffn_norm.weight", {h});
    L.w1 = load(b + "ffn_gate.weight", {h, ffn});
    L.w2 = load(b + "ffn_down.weight", {ffn, h});
    L.w3 = load(b + "ffn_up.weight", {h, ffn});
    load_vectors(f, c, L, b, used);
    w.layers.push_back(std::move(L));
  }
  w.final_norm = load("output_norm.weight", {h});
  if (!c.tied_output) w.wcls = load("output.weight", {h, v});  // tied: classifier() reads tok_emb
  if (!c.rope_freq_factors.empty()) used.insert("rope_freqs.weight");  // read by config_from_gguf (M20)
  check_all_used(f, used, c);
  return w;
}

Weights<float> stored_weights_from_gguf(const GgufFile& f, const Config& c, StoredWeights& out) {
  const auto h = static_cast<uint64_t>(c.hidden), v = static_cast<uint64_t>(c.vocab);
  const auto q = static_cast<uint64_t>(c.q_dim()), kv = static_cast<uint64_t>(c.kv_dim());
  const auto ffn = static_cast<uint64_t>(c.ffn);
  Weights<float> w;
  std::set<std::string> used;
  const auto load = [&](const std::string& name, std::vector<uint64_t> dims) { return akv::readers::load(f, name, std::move(dims), used); };
  const auto keep = [&](const std::string& name, std::vector<uint64_t> dims, int qk = 0) {
    return stored(f, name, std::move(dims), used, qk);
  };
  out.tok_emb = keep("token_embd.weight", {h, v});
  for (int l = 0; l < c.n_layers; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    LayerWeights<float> L;
    StoredLayer S;
    L.attn_norm = load(b + "attn_norm.weight", {h});
    // C3: only llama's Q/K rows are permuted by the converter (as weights_from_gguf).
    const int qk = c.arch == "llama" ? c.head_dim : 0;
    S.wq = keep(b + "attn_q.weight", {h, q}, qk);
    S.wk = keep(b + "attn_k.weight", {h, kv}, qk);
    S.wv = keep(b + "attn_v.weight", {h, kv});
    S.wo = keep(b + "attn_output.weight", {q, h});
    L.ffn_norm = load(b + "ffn_norm.weight", {h});
    S.w1 = keep(b + "ffn_gate.weight", {h, ffn});
    S.w2 = keep(b + "ffn_down.weight", {ffn, h});
    S.w3 = keep(b + "ffn_up.weight", {h, ffn});
    load_vectors(f, c, L, b, used);
    w.layers.push_back(std::move(L));
    out.layers.push_back(S);
  }
  w.final_norm = load("output_norm.weight", {h});
  if (!c.tied_output) out.wcls = keep("output.weight", {h, v});
  if (!c.rope_freq_factors.empty()) used.insert("rope_freqs.weight");  // read by config_from_gguf (M20)
  check_all_used(f, used, c);
  out.dequantize = &dequantize_stored;
  out.owner = f.bytes();
  out.drop_pages = [](const void* owner) { static_cast<const Bytes*>(owner)->drop_pages(); };
  return w;
}

std::shared_ptr<const Model> load_gguf_model(const std::string& path, const std::string& name) {
  return load_gguf_model(GgufFile::open(path), name);
}

std::shared_ptr<const Model> load_gguf_model(const GgufFile& f, const std::string& name) {
  const Config c = config_from_gguf(f, name);
  auto m = std::make_shared<Model>();
  m->config = c;
  auto stored = std::make_shared<StoredWeights>();
  m->weights = stored_weights_from_gguf(f, c, *stored);
  m->stored = std::move(stored);
  m->rope = make_global_rope(c);
  m->rope_local = make_local_rope(c);
  return m;
}

}  // namespace akv::readers
