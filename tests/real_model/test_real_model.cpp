// The real model file, SmolLM2-135M-Instruct Q4_1 (spec/gguf.md F1, Q6, C2). The setup test
// real_model_gguf_py_digests fetched it and wrote gguf-py's digest of every tensor; these tests
// read the same file with akv. A missing digest file fails, with the command to run.
#include <gtest/gtest.h>

#include <tuple>

#include <chrono>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "readers/gguf/dequant.hpp"
#include "readers/gguf/gguf.hpp"
#include "readers/gguf/gguf_config.hpp"
#include "readers/gguf/gguf_weights.hpp"
#include "reference/error.hpp"
#include "reference/prng.hpp"
#include "runtime/digest.hpp"
#include "../text_file.hpp"

using namespace akv;
using namespace akv::readers;

namespace {

using akv::test::read_text;

// gguf-py's digests, written by scripts/crosscheck-gguf; fails the test when absent.
nlohmann::json digests() {
  std::ifstream f(AKV_GGUF_PY_DIGESTS);
  if (!f) {
    ADD_FAILURE() << "no " << AKV_GGUF_PY_DIGESTS << ": run scripts/crosscheck-gguf " << AKV_GGUF_PY_DIGESTS
                  << " (it fetches the model and gguf-py; needs network once)";
    return nullptr;
  }
  return nlohmann::json::parse(f);
}

// A `NAME=value` line of scripts/fetch-model's smollm2 arm: the pins.
std::string pin(const std::string& name) {
  const std::string text = read_text(std::string(AKV_SOURCE_DIR) + "/scripts/fetch-model");
  const size_t arm = text.find("\n  smollm2)\n");
  if (arm == std::string::npos) return "";
  const std::string rest = text.substr(arm, text.find(";;", arm) - arm);
  std::smatch m;
  const std::regex re("\\n\\s*" + name + "=([0-9a-f]+)\\n");
  return std::regex_search(rest, m, re) ? m[1].str() : "";
}

}  // namespace

TEST(F1_FetchModel, RealFileHasThePinnedSizeAndDigest) {
  const auto d = digests();
  ASSERT_FALSE(d.is_null());
  const std::string path = d.at("model");
  const auto bytes = map_file(path);
  EXPECT_EQ(std::to_string(bytes->size()), pin("SIZE"));
  EXPECT_EQ(bytes->size(), 98362432u);
  EXPECT_EQ(sha256_hex({bytes->data(), bytes->size()}), pin("SHA256"));
}

TEST(Q6_GgufPyEquality, EveryTensorOfTheRealFile) {
  const auto d = digests();
  ASSERT_FALSE(d.is_null());
  const GgufFile f = GgufFile::open(d.at("model"));
  const auto& ref = d.at("tensors");
  ASSERT_EQ(ref.size(), f.tensors().size());
  ASSERT_EQ(f.tensors().size(), 272u);
  std::map<std::string, int> by_type;
  const auto t0 = std::chrono::steady_clock::now();
  for (size_t i = 0; i < f.tensors().size(); ++i) {
    const TensorInfo& t = f.tensors()[i];
    const auto& r = ref[i];
    ASSERT_EQ(std::string(t.name), r.at("name").get<std::string>()) << "tensor " << i;
    EXPECT_EQ(t.dims, r.at("dims").get<std::vector<uint64_t>>()) << t.name;
    EXPECT_EQ(type_name(t.type), r.at("type").get<std::string>()) << t.name;
    const std::vector<float> v = dequantize(t);
    ASSERT_EQ(v.size(), r.at("n_elements").get<uint64_t>()) << t.name;
    EXPECT_EQ(sha256_floats(v), r.at("sha256").get<std::string>()) << "tensor " << t.name << " (" << type_name(t.type)
                                                                    << ") differs from gguf-py's dequantize";
    ++by_type[type_name(t.type)];
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(by_type["Q4_1"], 210);
  EXPECT_EQ(by_type["F32"], 61);
  EXPECT_EQ(by_type["Q8_0"], 1);
  std::cout << "[ real-model ] " << f.tensors().size() << " tensors dequantized and hashed by akv in " << s
            << " s; gguf-py took " << d.value("seconds", 0.0) << " s (gguf " << d.value("gguf_version", "?")
            << ", numpy " << d.value("numpy_version", "?") << ")\n";
}

TEST(C2_SmolLM2Config, FromTheRealFile) {
  const auto d = digests();
  ASSERT_FALSE(d.is_null());
  const GgufFile f = GgufFile::open(d.at("model"));
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.alignment(), 32u);
  EXPECT_EQ(f.get_string("general.architecture"), "llama");
  const Config c = config_from_gguf(f, "smollm2");
  EXPECT_EQ(c.name, "smollm2");
  EXPECT_EQ(c.n_layers, 30);
  EXPECT_EQ(c.hidden, 576);
  EXPECT_EQ(c.n_heads, 9);
  EXPECT_EQ(c.n_kv_heads, 3);
  EXPECT_EQ(c.head_dim, 64);
  EXPECT_EQ(c.ffn, 1536);
  EXPECT_EQ(c.vocab, 49152);
  EXPECT_EQ(c.rope_theta, 100000.0f);
  EXPECT_EQ(c.rms_eps, 1e-5f);
  EXPECT_EQ(c.max_ctx, 8192);
  EXPECT_TRUE(c.tied_output);
  EXPECT_EQ(f.find_tensor("output.weight"), nullptr);
  EXPECT_EQ(f.get_array("tokenizer.ggml.merges").strings.size(), 48900u);
  EXPECT_EQ(f.get_array("tokenizer.ggml.tokens").strings.size(), 49152u);
}

TEST(C3_Weights, SmolLM2ShapesOnly) {
  // Shapes and the tied head only: that these weights compute SmolLM2's function is the
  // transformers crosscheck (scripts/crosscheck, docs/crosscheck.md).
  const auto d = digests();
  ASSERT_FALSE(d.is_null());
  const auto t0 = std::chrono::steady_clock::now();
  const auto m = load_gguf_model(d.at("model"), "smollm2");
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const Config& c = m->config;
  // K15: the matrices stay in the file's blocks; the float32 copy is made only on request.
  ASSERT_TRUE(m->stored);
  EXPECT_FALSE(has_dense_weights(*m));
  EXPECT_TRUE(m->weights.tok_emb.empty());
  const StoredWeights& st = *m->stored;
  EXPECT_EQ(st.tok_emb.type, 8u) << "Q8_0";
  EXPECT_EQ(std::tie(st.tok_emb.rows, st.tok_emb.cols), std::tie(c.vocab, c.hidden));
  ASSERT_EQ(st.layers.size(), 30u);
  for (const auto& L : st.layers) {
    for (const StoredMatrix* x : {&L.wq, &L.wk, &L.wv, &L.wo, &L.w1, &L.w2, &L.w3}) EXPECT_EQ(x->type, 3u) << "Q4_1";
    EXPECT_EQ(L.wq.rows * L.wq.cols, 576 * 576);
    EXPECT_EQ(L.wk.rows * L.wk.cols, 192 * 576);
    EXPECT_EQ(L.w2.rows * L.w2.cols, 576 * 1536);
    EXPECT_EQ(L.wq.qk_head_dim, 64);
    EXPECT_EQ(L.wv.qk_head_dim, 0);
  }
  EXPECT_TRUE(st.wcls.empty()) << "tied";
  const auto dm = dense_model(m);
  const auto& w = dm->weights;
  EXPECT_EQ(w.tok_emb.size(), 49152u * 576u);
  ASSERT_EQ(w.layers.size(), 30u);
  for (const auto& L : w.layers) {
    EXPECT_EQ(L.attn_norm.size(), 576u);
    EXPECT_EQ(L.wq.size(), 576u * 576u);
    EXPECT_EQ(L.wk.size(), 192u * 576u);
    EXPECT_EQ(L.wv.size(), 192u * 576u);
    EXPECT_EQ(L.wo.size(), 576u * 576u);
    EXPECT_EQ(L.ffn_norm.size(), 576u);
    EXPECT_EQ(L.w1.size(), 1536u * 576u);
    EXPECT_EQ(L.w2.size(), 576u * 1536u);
    EXPECT_EQ(L.w3.size(), 1536u * 576u);
  }
  EXPECT_EQ(w.final_norm.size(), 576u);
  EXPECT_TRUE(w.wcls.empty()) << "a tied output keeps no copy of tok_emb";
  EXPECT_EQ(&classifier(w), &w.tok_emb);
  ASSERT_NE(m->rope, nullptr);
  EXPECT_EQ(c.head_dim, 64);
  std::cout << "[ real-model ] SmolLM2 loaded in its file's blocks (" << w.tok_emb.size() + 30 * (2 * 576 + 2 * 576 * 576 + 2 * 192 * 576 + 3 * 1536 * 576) + 576
            << " parameters, W_cls tied) in " << s << " s\n";
}

TEST(F7_Hostile, MutatedRealMetadata) {
  // The real file's metadata and tensor infos (1.8 MB: 33 keys, 49,152 tokens, 48,900 merges,
  // 272 infos), cut where the data begins and mutated: each either parses with every tensor inside the
  // file (a count mutated down) or is bad_model, never a crash.
  const auto d = digests();
  ASSERT_FALSE(d.is_null());
  const GgufFile f = GgufFile::open(d.at("model"));
  const auto bytes = map_file(d.at("model"));
  const std::vector<uint8_t> head(bytes->data(), bytes->data() + f.data_offset());
  SplitMix64 rng{2026};
  int rejected = 0;
  for (int i = 0; i < 300; ++i) {
    auto b = head;
    const int flips = 1 + static_cast<int>(rng.next() % 8);
    // Bias towards the first 64 KB (header, scalar keys, the start of the token list).
    for (int k = 0; k < flips; ++k) b[(rng.next() & 1) ? rng.next() % 65536 : rng.next() % b.size()] = static_cast<uint8_t>(rng.next());
    if (i % 3 == 0) b.resize(rng.next() % b.size());  // and truncated
    try {
      const GgufFile g = GgufFile::parse(std::move(b), "mutated.gguf");
      for (const TensorInfo& t : g.tensors()) ASSERT_LE(g.data_offset() + t.offset + t.n_bytes, g.file_size());
    } catch (const Error& e) {
      ASSERT_EQ(e.code(), ErrorCode::kBadModel) << e.what();
      ++rejected;
    }
  }
  EXPECT_GT(rejected, 250);
}
