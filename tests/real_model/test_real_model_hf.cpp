// SmolLM2 saved through Hugging Face transformers equals its GGUF file, bit for bit
// (spec/safetensors.md H8). The setup test real_model_hf_export ran scripts/export-hf: transformers
// loaded the GGUF file and save_pretrained it (config.json + model.safetensors, float32) into
// AKV_HF_EXPORT, with akv_export.json naming the GGUF file. A missing folder fails, with the
// command to run.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <tuple>

#include "readers/gguf/gguf_weights.hpp"
#include "readers/hf/hf_checkpoint.hpp"
#include "readers/hf/hf_weights.hpp"
#include "reference/backend.hpp"
#include "reference/kv_cache.hpp"
#include "runtime/backends.hpp"

using namespace akv;
using namespace akv::readers;

namespace {

// akv_export.json, written by tests/tools/hf_export.py; fails the test when absent.
nlohmann::json manifest() {
  std::ifstream f(std::string(AKV_HF_EXPORT) + "/akv_export.json");
  if (!f) {
    ADD_FAILURE() << "no " << AKV_HF_EXPORT << "/akv_export.json: run scripts/export-hf " << AKV_HF_EXPORT
                  << " (it fetches the model and the crosscheck venv; needs network once)";
    return nullptr;
  }
  return nlohmann::json::parse(f);
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void expect_same(const std::vector<float>& a, const std::vector<float>& b, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0) << what << " differs between the HF folder and the GGUF file";
}

// Logits (m, vocab) of `tokens` from an empty cache through `backend`.
std::vector<float> logits(Backend& backend, const std::vector<Token>& tokens) {
  KVCache cache(backend.model().config);
  std::vector<float> out(tokens.size() * static_cast<size_t>(backend.model().config.vocab));
  backend.forward(cache, tokens, out);
  return out;
}

struct Models {
  std::shared_ptr<const Model> hf, gguf;
};

// Both models, loaded once for the suite.
const Models& models() {
  static const Models m = [] {
    Models out;
    const auto d = manifest();
    if (d.is_null()) return out;
    auto t0 = std::chrono::steady_clock::now();
    out.hf = load_hf_model(AKV_HF_EXPORT, "smollm2-hf");
    const double hf_s = seconds_since(t0);
    t0 = std::chrono::steady_clock::now();
    out.gguf = load_gguf_model(d.at("model"), "smollm2");
    std::cout << "[ real-model ] loaded the HF folder in " << hf_s << " s, the GGUF file in " << seconds_since(t0)
              << " s; exported by transformers " << d.at("versions").value("transformers", "?") << " in "
              << d.value("seconds", 0.0) << " s\n";
    return out;
  }();
  return m;
}

}  // namespace

TEST(H8_HfEqualsGguf, TheExportedFolder) {
  ASSERT_FALSE(manifest().is_null());
  const HfCheckpoint c = HfCheckpoint::open(AKV_HF_EXPORT);
  ASSERT_EQ(c.files().size(), 1u);
  const SafetensorsFile& f = c.files()[0];
  EXPECT_EQ(f.tensors().size(), 272u);  // 1 + 30 x 9 + 1: no lm_head (tied)
  for (const SafeTensor& t : f.tensors()) EXPECT_EQ(t.dtype, "F32") << t.name;
  EXPECT_EQ(c.find("lm_head.weight").tensor, nullptr);
  EXPECT_EQ(f.metadata().count("format"), 1u);
}

TEST(H8_HfEqualsGguf, SameConfigAndEveryWeightTensor) {
  const Models& m = models();
  ASSERT_TRUE(m.hf && m.gguf);
  const Config &a = m.hf->config, &b = m.gguf->config;
  EXPECT_EQ(std::tie(a.vocab, a.hidden, a.n_layers, a.n_heads, a.n_kv_heads, a.head_dim, a.ffn, a.max_ctx, a.tied_output),
            std::tie(b.vocab, b.hidden, b.n_layers, b.n_heads, b.n_kv_heads, b.head_dim, b.ffn, b.max_ctx, b.tied_output));
  EXPECT_EQ(a.rope_theta, b.rope_theta);
  EXPECT_EQ(a.rms_eps, b.rms_eps);
  EXPECT_TRUE(a.tied_output);
  const auto gguf_dense = dense_model(m.gguf);  // K15: float32 only on request
  const Weights<float>&x = m.hf->weights, &y = gguf_dense->weights;
  expect_same(x.tok_emb, y.tok_emb, "tok_emb");
  expect_same(x.final_norm, y.final_norm, "final_norm");
  expect_same(classifier(x), classifier(y), "W_cls (tied: the embedding)");
  ASSERT_EQ(x.layers.size(), y.layers.size());
  for (size_t l = 0; l < x.layers.size(); ++l) {
    const auto &p = x.layers[l], &q = y.layers[l];
    const std::string L = "layer " + std::to_string(l) + " ";
    expect_same(p.attn_norm, q.attn_norm, L + "attn_norm");
    expect_same(p.wq, q.wq, L + "wq (transformers' un-permutation vs akv's, C3)");
    expect_same(p.wk, q.wk, L + "wk (transformers' un-permutation vs akv's, C3)");
    expect_same(p.wv, q.wv, L + "wv");
    expect_same(p.wo, q.wo, L + "wo");
    expect_same(p.ffn_norm, q.ffn_norm, L + "ffn_norm");
    expect_same(p.w1, q.w1, L + "w1");
    expect_same(p.w2, q.w2, L + "w2");
    expect_same(p.w3, q.w3, L + "w3");
  }
}

TEST(H8_HfEqualsGguf, SameLogitsOnTheReferenceAndCpuBackends) {
  const Models& m = models();
  ASSERT_TRUE(m.hf && m.gguf);
  // 16 tokens: ChatML's <|im_start|> (1), then ids spread over the vocabulary.
  std::vector<Token> tokens = {1};
  for (int i = 1; i < 16; ++i) tokens.push_back(static_cast<Token>((i * 7919 + 13) % 49152));
  for (const char* name : {"reference", "cpu"}) {
    const auto t0 = std::chrono::steady_clock::now();
    auto bh = std::string(name) == "reference" ? make_reference_backend(m.hf) : make_backend(name, m.hf);
    auto bg = std::string(name) == "reference" ? make_reference_backend(m.gguf) : make_backend(name, m.gguf);
    const std::vector<float> a = logits(*bh, tokens), b = logits(*bg, tokens);
    expect_same(a, b, std::string(name) + " logits");
    bool finite = true;
    for (float v : a) finite = finite && std::isfinite(v);
    EXPECT_TRUE(finite) << name;
    std::cout << "[ real-model ] " << name << ": " << a.size() << " logits of 16 tokens bitwise equal, both paths, in "
              << seconds_since(t0) << " s\n";
  }
}
