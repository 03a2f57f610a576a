// akv's weights from a llama-arch GGUF file (spec/gguf.md C3): names, M4 shapes, the Q/K row
// un-permutation, tied output; on a synthetic file whose every value names its row and column.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>

#include "tests/support/gguf_builder.hpp"
#include "readers/gguf/gguf_config.hpp"
#include "readers/gguf/gguf_weights.hpp"
#include "reference/error.hpp"

using namespace akv;
using namespace akv::readers;
using akv::test::kv;
using akv::test::kv_str;
using akv::test::TestGguf;
using akv::test::Writer;

namespace {

constexpr int kHidden = 8, kHeads = 2, kKvHeads = 1, kHeadDim = 4, kFfn = 16, kVocab = 5, kLayers = 2;

// The value at (row, col) of tensor `id` in Hugging Face (rotate-half) layout.
float value(int id, int row, int col) { return static_cast<float>(id * 10000 + row * 100 + col); }

// W (rows, cols) as llama.cpp's converter writes it: ggml dims [cols, rows]; for Q/K, the rows
// of each head permuted (HF row j*hd/2 + i goes to file row 2i + j).
std::vector<uint8_t> matrix(int id, int rows, int cols, bool permuted) {
  Writer w;
  for (int fr = 0; fr < rows; ++fr) {
    int hf = fr;
    if (permuted) {
      const int head = fr / kHeadDim, r = fr % kHeadDim, i = r / 2, j = r % 2;
      hf = head * kHeadDim + j * (kHeadDim / 2) + i;
    }
    for (int c = 0; c < cols; ++c) w.put(value(id, hf, c));
  }
  return w.b;
}

TestGguf llama_file(bool tied) {
  TestGguf g;
  g.kvs = {kv_str("general.architecture", "llama"),
           kv<uint32_t>("llama.embedding_length", 4, kHidden),
           kv<uint32_t>("llama.block_count", 4, kLayers),
           kv<uint32_t>("llama.feed_forward_length", 4, kFfn),
           kv<uint32_t>("llama.context_length", 4, 32),
           kv<uint32_t>("llama.attention.head_count", 4, kHeads),
           kv<uint32_t>("llama.attention.head_count_kv", 4, kKvHeads),
           kv<float>("llama.attention.layer_norm_rms_epsilon", 6, 1e-5f),
           kv<uint32_t>("llama.vocab_size", 4, kVocab)};
  const auto mat = [&](const std::string& name, int id, int rows, int cols, bool perm = false) {
    g.tensors.push_back({name, {static_cast<uint64_t>(cols), static_cast<uint64_t>(rows)}, 0, matrix(id, rows, cols, perm)});
  };
  const auto vec = [&](const std::string& name, int id) {
    g.tensors.push_back({name, {kHidden}, 0, matrix(id, 1, kHidden, false)});
  };
  mat("token_embd.weight", 1, kVocab, kHidden);
  for (int l = 0; l < kLayers; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    const int id = 10 + 10 * l;
    vec(b + "attn_norm.weight", id);
    mat(b + "attn_q.weight", id + 1, kHeads * kHeadDim, kHidden, true);
    mat(b + "attn_k.weight", id + 2, kKvHeads * kHeadDim, kHidden, true);
    mat(b + "attn_v.weight", id + 3, kKvHeads * kHeadDim, kHidden);
    mat(b + "attn_output.weight", id + 4, kHidden, kHeads * kHeadDim);
    vec(b + "ffn_norm.weight", id + 5);
    mat(b + "ffn_gate.weight", id + 6, kFfn, kHidden);
    mat(b + "ffn_down.weight", id + 7, kHidden, kFfn);
    mat(b + "ffn_up.weight", id + 8, kFfn, kHidden);
  }
  vec("output_norm.weight", 2);
  if (!tied) mat("output.weight", 3, kVocab, kHidden);
  return g;
}

// Expects w (rows, cols) to hold tensor id's HF-layout values.
void expect_matrix(const std::vector<float>& w, int id, int rows, int cols, const std::string& what) {
  ASSERT_EQ(w.size(), static_cast<size_t>(rows) * cols) << what;
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) ASSERT_EQ(w[static_cast<size_t>(r) * cols + c], value(id, r, c)) << what << " (" << r << ", " << c << ")";
}

}  // namespace

TEST(C3_Weights, SourceRowOfQk) {
  const int expect[8] = {0, 2, 4, 6, 1, 3, 5, 7};  // head dim 8: akv row r <- file row
  for (int r = 0; r < 8; ++r) EXPECT_EQ(gguf_qk_source_row(r, 8), expect[r]) << r;
  // A bijection for the real head dim.
  std::vector<int> seen(64, 0);
  for (int r = 0; r < 64; ++r) ++seen.at(gguf_qk_source_row(r, 64));
  for (int s : seen) EXPECT_EQ(s, 1);
}

TEST(C3_Weights, EveryTensorInPlaceQkUnpermuted) {
  const GgufFile f = GgufFile::parse(llama_file(false).bytes(), "w.gguf");
  const Config c = config_from_gguf(f, "w");
  const Weights<float> w = weights_from_gguf(f, c);
  expect_matrix(w.tok_emb, 1, kVocab, kHidden, "tok_emb");
  ASSERT_EQ(w.layers.size(), static_cast<size_t>(kLayers));
  for (int l = 0; l < kLayers; ++l) {
    const auto& L = w.layers[l];
    const int id = 10 + 10 * l;
    expect_matrix(L.attn_norm, id, 1, kHidden, "attn_norm");
    expect_matrix(L.wq, id + 1, kHeads * kHeadDim, kHidden, "wq");  // back in rotate-half order
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
}

TEST(C3_Weights, TiedOutputReadsTheEmbedding) {
  const GgufFile f = GgufFile::parse(llama_file(true).bytes(), "w.gguf");
  const Config c = config_from_gguf(f, "w");
  ASSERT_TRUE(c.tied_output);
  const Weights<float> w = weights_from_gguf(f, c);
  EXPECT_TRUE(w.wcls.empty()) << "a tied output keeps no copy of tok_emb";
  EXPECT_EQ(&classifier(w), &w.tok_emb);
}

TEST(C3_Weights, MissingOrMisshapenTensor) {
  const auto bad = [](TestGguf g, const std::string& needle) {
    const GgufFile f = GgufFile::parse(g.bytes(), "w.gguf");
    const Config c = config_from_gguf(f, "w");
    try {
      weights_from_gguf(f, c);
      ADD_FAILURE() << "loaded; expected " << needle;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kBadModel);
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  TestGguf missing = llama_file(false);
  std::erase_if(missing.tensors, [](const akv::test::TestTensor& t) { return t.name == "blk.1.ffn_up.weight"; });
  bad(missing, "w.gguf: tensor 'blk.1.ffn_up.weight': missing");
  TestGguf shape = llama_file(false);
  for (auto& t : shape.tensors)
    if (t.name == "blk.0.attn_k.weight") t.dims = {4, 8};
  bad(shape, "tensor 'blk.0.attn_k.weight'.dims: [4, 8], expected [8, 4]");
}

namespace {
// weights_from_gguf(file) must fail with bad_model and a message holding `needle`.
void expect_refused(const TestGguf& g, const std::string& needle) {
  const GgufFile f = GgufFile::parse(g.bytes(), "w.gguf");
  try {
    const Config c = config_from_gguf(f, "w");
    weights_from_gguf(f, c);
    ADD_FAILURE() << "loaded; expected " << needle;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kBadModel);
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what() << "\nexpected: " << needle;
  }
}

// The file with float `v` at element `index` of tensor `name` (F32 data).
TestGguf with_value(TestGguf g, const std::string& name, size_t index, float v) {
  for (auto& t : g.tensors)
    if (t.name == name) std::memcpy(t.data.data() + 4 * index, &v, 4);
  return g;
}
}  // namespace

// F8: a NaN or an Inf in any weight is refused at load, naming the tensor and the first index,
// so no run can reach the comparison with NaN logits.
TEST(F8_FiniteWeights, NanOrInfInAnyTensorIsRefusedNamingIt) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  expect_refused(with_value(llama_file(true), "output_norm.weight", 3, nan), "w.gguf: tensor 'output_norm.weight'[3] (row 0, column 3): nan");
  // W_q (8 x 8, ggml dims [8, 8]): element 13 is file row 1, column 5.
  expect_refused(with_value(llama_file(false), "blk.1.attn_q.weight", 13, nan),
                 "w.gguf: tensor 'blk.1.attn_q.weight'[13] (row 1, column 5): nan");
  expect_refused(with_value(llama_file(false), "blk.0.ffn_down.weight", 0, -inf), "tensor 'blk.0.ffn_down.weight'[0] (row 0, column 0): -inf");
  expect_refused(with_value(llama_file(false), "output.weight", 39, inf), "tensor 'output.weight'[39] (row 4, column 7): inf");
  // The embedding too: a raw-token message may name any row, a tied output reads them all.
  expect_refused(with_value(llama_file(true), "token_embd.weight", 8, nan), "tensor 'token_embd.weight'[8] (row 1, column 0): nan");
}

// C4: a tensor the model does not read is refused by name, never skipped.
TEST(C4_EveryTensorUsed, ATensorAkvWouldIgnoreIsRefused) {
  const auto with_tensor = [](TestGguf g, const std::string& name, std::vector<uint64_t> dims) {
    uint64_t n = 1;
    for (uint64_t d : dims) n *= d;
    g.tensors.push_back({name, dims, 0, akv::test::f32_bytes(n)});
    return g;
  };
  // rope_freqs.weight is read now (Llama 3's RoPE factors, M20, C7): not among these.
  expect_refused(with_tensor(llama_file(true), "blk.0.attn_q.bias", {kHeads * kHeadDim}), "tensor 'blk.0.attn_q.bias': a bias");
  expect_refused(with_tensor(llama_file(true), "blk.1.attn_k.bias", {kKvHeads * kHeadDim}), "tensor 'blk.1.attn_k.bias': a bias");
  expect_refused(with_tensor(llama_file(true), "blk.2.attn_norm.weight", {kHidden}),
                 "tensor 'blk.2.attn_norm.weight': layer 2 is past llama.block_count (2)");
  expect_refused(with_tensor(llama_file(false), "blk.0.ffn_gate_inp.weight", {kHidden, 4}),
                 "tensor 'blk.0.ffn_gate_inp.weight': not part of the llama model");
  // A name from the file is shown on one line, whatever bytes it holds (F7).
  const GgufFile odd = GgufFile::parse(with_tensor(llama_file(true), "x\ny", {kHidden}).bytes(), "w.gguf");
  try {
    weights_from_gguf(odd, config_from_gguf(odd, "w"));
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
  }
  // The file as it is loads: every tensor is read.
  const GgufFile ok = GgufFile::parse(llama_file(true).bytes(), "w.gguf");
  EXPECT_NO_THROW(weights_from_gguf(ok, config_from_gguf(ok, "w")));
}
