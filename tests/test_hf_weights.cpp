// akv's weights from a Hugging Face Llama folder (spec/safetensors.md H7): names, shapes
// against config.json, the tied head, a config.json that disagrees with the tensors, and the
// same values written as a GGUF file (Q/K rows permuted as llama.cpp's converter does) giving
// the same model bit for bit.
#include <gtest/gtest.h>

#include <limits>

#include <cstring>
#include <map>
#include <tuple>

#include "tests/support/gguf_builder.hpp"
#include "readers/gguf/gguf_config.hpp"
#include "readers/gguf/gguf_weights.hpp"
#include "readers/hf/hf_config.hpp"
#include "readers/hf/hf_weights.hpp"
#include "reference/backend.hpp"
#include "reference/error.hpp"
#include "tests/support/safetensors_builder.hpp"

using namespace akv;
using namespace akv::readers;
using akv::test::le_bytes;
using akv::test::TestSafetensors;
using json = nlohmann::json;

namespace {

constexpr int kHidden = 8, kHeads = 2, kKvHeads = 1, kHeadDim = 4, kFfn = 16, kVocab = 5, kLayers = 2;

// The value at (row, col) of tensor `id`, in HF (rotate-half) layout; small enough for the
// reference forward pass to stay finite when scaled.
float value(int id, int row, int col) { return static_cast<float>(id * 10000 + row * 100 + col) * 1e-6f; }

std::vector<float> matrix(int id, int rows, int cols) {
  std::vector<float> m;
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) m.push_back(value(id, r, c));
  return m;
}

json config(bool tied) {
  return {{"architectures", {"LlamaForCausalLM"}}, {"model_type", "llama"}, {"hidden_size", kHidden},
          {"num_hidden_layers", kLayers}, {"num_attention_heads", kHeads}, {"num_key_value_heads", kKvHeads},
          {"head_dim", kHeadDim}, {"intermediate_size", kFfn}, {"vocab_size", kVocab},
          {"max_position_embeddings", 32}, {"rms_norm_eps", 1e-5}, {"rope_theta", 10000.0},
          {"rope_scaling", nullptr}, {"hidden_act", "silu"}, {"tie_word_embeddings", tied}};
}

// Every tensor of the model: name, id, rows, cols (cols 0: a vector of `rows`).
struct Spec {
  std::string name;
  int id, rows, cols;
};
std::vector<Spec> tensors(bool tied) {
  std::vector<Spec> s = {{"model.embed_tokens.weight", 1, kVocab, kHidden}};
  for (int l = 0; l < kLayers; ++l) {
    const std::string b = "model.layers." + std::to_string(l) + ".";
    const int id = 10 + 10 * l;
    s.push_back({b + "input_layernorm.weight", id, kHidden, 0});
    s.push_back({b + "self_attn.q_proj.weight", id + 1, kHeads * kHeadDim, kHidden});
    s.push_back({b + "self_attn.k_proj.weight", id + 2, kKvHeads * kHeadDim, kHidden});
    s.push_back({b + "self_attn.v_proj.weight", id + 3, kKvHeads * kHeadDim, kHidden});
    s.push_back({b + "self_attn.o_proj.weight", id + 4, kHidden, kHeads * kHeadDim});
    s.push_back({b + "post_attention_layernorm.weight", id + 5, kHidden, 0});
    s.push_back({b + "mlp.gate_proj.weight", id + 6, kFfn, kHidden});
    s.push_back({b + "mlp.down_proj.weight", id + 7, kHidden, kFfn});
    s.push_back({b + "mlp.up_proj.weight", id + 8, kFfn, kHidden});
  }
  s.push_back({"model.norm.weight", 2, kHidden, 0});
  if (!tied) s.push_back({"lm_head.weight", 3, kVocab, kHidden});
  return s;
}

// A tensor stored in another dtype than F32: its dtype and bytes.
struct Stored {
  std::string dtype;
  std::vector<uint8_t> bytes;
};

TestSafetensors checkpoint(bool tied, const std::map<std::string, Stored>& other) {
  TestSafetensors st;
  for (const Spec& t : tensors(tied)) {
    std::vector<uint64_t> shape = {static_cast<uint64_t>(t.rows)};
    if (t.cols) shape.push_back(static_cast<uint64_t>(t.cols));
    if (const auto it = other.find(t.name); it != other.end())
      st.add(t.name, it->second.dtype, shape, it->second.bytes);
    else
      st.add(t.name, "F32", shape, le_bytes(t.cols ? matrix(t.id, t.rows, t.cols) : matrix(t.id, 1, t.rows)));
  }
  return st;
}

// A model folder; `edit` may change the config and the checkpoint before they are written.
std::filesystem::path folder(const std::string& name, bool tied, const std::function<void(json&, TestSafetensors&)>& edit = {},
                             const std::map<std::string, Stored>& other = {}) {
  const auto dir = akv::test::fresh_dir(name);
  json c = config(tied);
  TestSafetensors st = checkpoint(tied, other);
  if (edit) edit(c, st);
  akv::test::write_file(dir / "config.json", c.dump());
  akv::test::write_file(dir / "model.safetensors", st.bytes());
  return dir;
}

void expect_matrix(const std::vector<float>& w, int id, int rows, int cols, const std::string& what) {
  ASSERT_EQ(w, matrix(id, rows, cols)) << what;
}

void expect_bad(const std::filesystem::path& dir, const std::string& needle) {
  try {
    load_hf_model(dir.string(), "m");
    ADD_FAILURE() << "loaded; expected bad_model with: " << needle;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kBadModel) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << "message: " << e.what() << "\nexpected: " << needle;
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
  }
  std::filesystem::remove_all(dir);
}

// The same model as a GGUF file, as llama.cpp's converter writes it: ggml dims reversed, W_q /
// W_k rows permuted within each head (HF row j*hd/2 + i -> file row 2i + j), names renamed.
std::vector<uint8_t> as_gguf(bool tied) {
  using akv::test::kv;
  akv::test::TestGguf g;
  g.kvs = {akv::test::kv_str("general.architecture", "llama"), kv<uint32_t>("llama.embedding_length", 4, kHidden),
           kv<uint32_t>("llama.block_count", 4, kLayers), kv<uint32_t>("llama.feed_forward_length", 4, kFfn),
           kv<uint32_t>("llama.context_length", 4, 32), kv<uint32_t>("llama.attention.head_count", 4, kHeads),
           kv<uint32_t>("llama.attention.head_count_kv", 4, kKvHeads), kv<float>("llama.rope.freq_base", 6, 10000.0f),
           kv<float>("llama.attention.layer_norm_rms_epsilon", 6, 1e-5f), kv<uint32_t>("llama.vocab_size", 4, kVocab)};
  const auto rename = [](std::string n) {
    const std::pair<const char*, const char*> map[] = {
        {"model.embed_tokens", "token_embd"}, {"model.norm", "output_norm"}, {"lm_head", "output"}, {"model.layers.", "blk."},
        {"input_layernorm", "attn_norm"}, {"self_attn.q_proj", "attn_q"}, {"self_attn.k_proj", "attn_k"},
        {"self_attn.v_proj", "attn_v"}, {"self_attn.o_proj", "attn_output"}, {"post_attention_layernorm", "ffn_norm"},
        {"mlp.gate_proj", "ffn_gate"}, {"mlp.down_proj", "ffn_down"}, {"mlp.up_proj", "ffn_up"}};
    for (const auto& [from, to] : map)
      if (const auto at = n.find(from); at != std::string::npos) n.replace(at, std::strlen(from), to);
    return n;
  };
  for (const Spec& t : tensors(tied)) {
    const int cols = t.cols ? t.cols : t.rows, rows = t.cols ? t.rows : 1;
    const bool qk = t.name.find("q_proj") != std::string::npos || t.name.find("k_proj") != std::string::npos;
    std::vector<float> m;
    for (int fr = 0; fr < rows; ++fr) {
      int hf = fr;
      if (qk) {
        const int head = fr / kHeadDim, r = fr % kHeadDim;
        hf = head * kHeadDim + (r % 2) * (kHeadDim / 2) + r / 2;
      }
      for (int c = 0; c < cols; ++c) m.push_back(value(t.id, hf, c));
    }
    std::vector<uint64_t> dims = {static_cast<uint64_t>(cols)};
    if (t.cols) dims.push_back(static_cast<uint64_t>(rows));
    g.tensors.push_back({rename(t.name), dims, 0, le_bytes(m)});
  }
  return g.bytes();
}

}  // namespace

TEST(H7_HfWeights, EveryTensorInPlace) {
  const auto dir = folder("h7_place", false);
  const auto m = load_hf_model(dir.string(), "m");
  const Config& c = m->config;
  EXPECT_FALSE(c.tied_output);
  const Weights<float>& w = m->weights;
  expect_matrix(w.tok_emb, 1, kVocab, kHidden, "tok_emb");
  ASSERT_EQ(w.layers.size(), static_cast<size_t>(kLayers));
  for (int l = 0; l < kLayers; ++l) {
    const auto& L = w.layers[l];
    const int id = 10 + 10 * l;
    expect_matrix(L.attn_norm, id, 1, kHidden, "attn_norm");
    expect_matrix(L.wq, id + 1, kHeads * kHeadDim, kHidden, "wq");  // as stored: no un-permutation
    expect_matrix(L.wk, id + 2, kKvHeads * kHeadDim, kHidden, "wk");
    expect_matrix(L.wv, id + 3, kKvHeads * kHeadDim, kHidden, "wv");
    expect_matrix(L.wo, id + 4, kHidden, kHeads * kHeadDim, "wo");
    expect_matrix(L.ffn_norm, id + 5, 1, kHidden, "ffn_norm");
    expect_matrix(L.w1, id + 6, kFfn, kHidden, "w1");
    expect_matrix(L.w2, id + 7, kHidden, kFfn, "w2");
    expect_matrix(L.w3, id + 8, kFfn, kHidden, "w3");
  }
  expect_matrix(w.final_norm, 2, 1, kHidden, "final_norm");
  expect_matrix(w.wcls, 3, kVocab, kHidden, "wcls");
  ASSERT_NE(m->rope, nullptr);
  std::filesystem::remove_all(dir);
}

TEST(H7_HfWeights, TiedHeadIsTheEmbedding) {
  const auto dir = folder("h7_tied", true);
  const auto m = load_hf_model(dir.string(), "m");
  EXPECT_TRUE(m->config.tied_output);
  EXPECT_TRUE(m->weights.wcls.empty()) << "no copy kept, as weights_from_gguf";
  EXPECT_EQ(&classifier(m->weights), &m->weights.tok_emb);
  std::filesystem::remove_all(dir);
  // An lm_head.weight stored anyway is read when it equals the embedding, rejected otherwise.
  const auto same = folder("h7_tied_same", true, [](json&, TestSafetensors& st) {
    st.add("lm_head.weight", "F32", {kVocab, kHidden}, le_bytes(matrix(1, kVocab, kHidden)));
  });
  EXPECT_NO_THROW(load_hf_model(same.string(), "m"));
  std::filesystem::remove_all(same);
  expect_bad(folder("h7_tied_differs", true, [](json&, TestSafetensors& st) {
               st.add("lm_head.weight", "F32", {kVocab, kHidden}, le_bytes(matrix(3, kVocab, kHidden)));
             }),
             "tensor 'lm_head.weight': differs from model.embed_tokens.weight, but config.json 'tie_word_embeddings' is true");
}

TEST(H7_HfWeights, HalfPrecisionTensorsAreConverted) {
  std::vector<uint16_t> bf(kHidden), hf(kHidden);
  for (int i = 0; i < kHidden; ++i) {
    bf[i] = static_cast<uint16_t>(0x3F80 + i);  // bfloat16 1 + i/128
    hf[i] = static_cast<uint16_t>(0x3C00 + i);  // binary16 1 + i/1024
  }
  const auto dir = folder("h7_half", false, {},
                          {{"model.norm.weight", {"BF16", le_bytes(bf)}}, {"model.layers.0.input_layernorm.weight", {"F16", le_bytes(hf)}}});
  const auto m = load_hf_model(dir.string(), "m");
  for (int i = 0; i < kHidden; ++i) {
    EXPECT_EQ(m->weights.final_norm[i], 1.0f + static_cast<float>(i) / 128) << i;
    EXPECT_EQ(m->weights.layers[0].attn_norm[i], 1.0f + static_cast<float>(i) / 1024) << i;
  }
  std::filesystem::remove_all(dir);
}

TEST(H7_HfWeights, ConfigThatDisagreesWithTheTensors) {
  expect_bad(folder("h7_vocab", false, [](json& c, TestSafetensors&) { c["vocab_size"] = kVocab + 1; }),
             "model.safetensors: tensor 'model.embed_tokens.weight'.shape: [5, 8], but config.json gives [6, 8] (vocab_size, hidden_size)");
  expect_bad(folder("h7_kv", false, [](json& c, TestSafetensors&) { c["num_key_value_heads"] = kHeads; }),
             "tensor 'model.layers.0.self_attn.k_proj.weight'.shape: [4, 8], but config.json gives [8, 8] (num_key_value_heads x head_dim, hidden_size)");
  expect_bad(folder("h7_ffn", false, [](json& c, TestSafetensors&) { c["intermediate_size"] = 12; }),
             "tensor 'model.layers.0.mlp.gate_proj.weight'.shape: [16, 8], but config.json gives [12, 8]");
  expect_bad(folder("h7_layers", false, [](json& c, TestSafetensors&) { c["num_hidden_layers"] = 1; }),
             "tensor 'model.layers.1.input_layernorm.weight': not part of the llama model config.json describes");
  expect_bad(folder("h7_more_layers", false, [](json& c, TestSafetensors&) { c["num_hidden_layers"] = 3; }),
             "tensor 'model.layers.2.input_layernorm.weight': missing");
  expect_bad(folder("h7_untied", true, [](json& c, TestSafetensors&) { c["tie_word_embeddings"] = false; }),
             "tensor 'lm_head.weight': missing");
  expect_bad(folder("h7_bias", false, [](json&, TestSafetensors& st) {
               st.add("model.layers.0.self_attn.q_proj.bias", "F32", {kHeads * kHeadDim}, le_bytes(std::vector<float>(kHeads * kHeadDim)));
             }),
             "tensor 'model.layers.0.self_attn.q_proj.bias': not part of the llama model");
  expect_bad(folder("h7_dtype", false, {}, {{"model.norm.weight", {"I32", le_bytes(std::vector<int32_t>(kHidden))}}}),
             "tensor 'model.norm.weight'.dtype: 'I32' is not supported");
  expect_bad(folder("h7_arch", false, [](json& c, TestSafetensors&) { c["model_type"] = "qwen2"; }),
             "config.json: 'model_type': \"qwen2\" is not supported");
  const auto no_weights = folder("h7_no_weights", false);
  std::filesystem::remove(no_weights / "model.safetensors");
  expect_bad(no_weights, "no model.safetensors or model.safetensors.index.json");
}

TEST(H7_HfWeights, SameModelAsItsGgufFile) {
  for (const bool tied : {false, true}) {
    const auto dir = folder(tied ? "h7_gguf_tied" : "h7_gguf", tied);
    const auto hf = load_hf_model(dir.string(), "m");
    const GgufFile f = GgufFile::parse(as_gguf(tied), "m.gguf");
    auto gg = std::make_shared<Model>();
    gg->config = config_from_gguf(f, "m");
    gg->weights = weights_from_gguf(f, gg->config);
    gg->rope = std::make_shared<const RopeTable>(make_rope_table(gg->config.head_dim, gg->config.rope_theta, gg->config.max_ctx));
    const Config &a = hf->config, &b = gg->config;
    EXPECT_EQ(std::tie(a.vocab, a.hidden, a.n_layers, a.n_heads, a.n_kv_heads, a.head_dim, a.ffn, a.max_ctx, a.tied_output),
              std::tie(b.vocab, b.hidden, b.n_layers, b.n_heads, b.n_kv_heads, b.head_dim, b.ffn, b.max_ctx, b.tied_output));
    EXPECT_EQ(a.rope_theta, b.rope_theta);
    EXPECT_EQ(a.rms_eps, b.rms_eps);
    const auto& x = hf->weights;
    const auto& y = gg->weights;
    EXPECT_EQ(x.tok_emb, y.tok_emb);
    EXPECT_EQ(x.final_norm, y.final_norm);
    EXPECT_EQ(x.wcls, y.wcls);
    for (int l = 0; l < kLayers; ++l) {
      const auto &p = x.layers[l], &q = y.layers[l];
      EXPECT_EQ(p.wq, q.wq) << l;  // the GGUF path's un-permutation gives HF's rows
      EXPECT_EQ(p.wk, q.wk) << l;
      EXPECT_EQ(std::tie(p.attn_norm, p.wv, p.wo, p.ffn_norm, p.w1, p.w2, p.w3), std::tie(q.attn_norm, q.wv, q.wo, q.ffn_norm, q.w1, q.w2, q.w3)) << l;
    }
    // And so the same logits, through the reference backend.
    std::vector<float> la(3 * kVocab), lb(3 * kVocab);
    const std::vector<Token> toks = {1, 4, 2};
    KVCache ca(hf->config), cb(gg->config);
    make_reference_backend(hf)->forward(ca, toks, la);
    make_reference_backend(gg)->forward(cb, toks, lb);
    EXPECT_EQ(std::memcmp(la.data(), lb.data(), la.size() * 4), 0);
    std::filesystem::remove_all(dir);
  }
}

// spec/gguf.md F8 on the safetensors path (H7): a NaN or an Inf in any tensor is refused at
// load, naming the tensor, the first index and its row and column.
TEST(F8_FiniteWeights, SafetensorsNanOrInfIsRefusedNamingIt) {
  std::vector<float> norm = matrix(2, 1, kHidden);
  norm[5] = std::numeric_limits<float>::quiet_NaN();
  expect_bad(folder("f8_norm", false, {}, {{"model.norm.weight", {"F32", le_bytes(norm)}}}),
             "model.safetensors: tensor 'model.norm.weight'[5] (row 0, column 5): nan");
  std::vector<float> q = matrix(11, kHeads * kHeadDim, kHidden);
  q[kHidden + 2] = -std::numeric_limits<float>::infinity();
  expect_bad(folder("f8_q", false, {}, {{"model.layers.0.self_attn.q_proj.weight", {"F32", le_bytes(q)}}}),
             "tensor 'model.layers.0.self_attn.q_proj.weight'[10] (row 1, column 2): -inf");
  std::vector<uint16_t> half(kHidden, 0x3C00);
  half[7] = 0x7C00;  // binary16 +inf
  expect_bad(folder("f8_half", false, {}, {{"model.layers.1.input_layernorm.weight", {"F16", le_bytes(half)}}}),
             "tensor 'model.layers.1.input_layernorm.weight'[7] (row 0, column 7): inf");
}
