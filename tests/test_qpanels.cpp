// Weights kept as the file stores them (spec/kernels-cpu.md K15): the cpu backend's quantized
// panels give the float32 panels' bits, memcmp-equal, on every ISA; a GGUF model's float32
// matrices are never kept (only dense_model makes them).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "optimized/cpu/cpu_backend.hpp"
#include "optimized/cpu/isa.hpp"
#include "optimized/cpu/kernels.hpp"
#include "readers/gguf/dequant.hpp"
#include "readers/gguf/gguf_weights.hpp"
#include "reference/backend.hpp"
#include "reference/model.hpp"
#include "reference/prng.hpp"
#include "tests/support/gguf_builder.hpp"

using namespace akv;

namespace {

constexpr uint32_t kQ4_0 = 2, kQ4_1 = 3, kQ8_0 = 8, kF16 = 1;

size_t block_bytes(uint32_t t) { return t == kQ8_0 ? 34 : t == kQ4_1 ? 20 : 18; }

// A random finite fp16 scale: mostly normal magnitudes of weights, some subnormal, some large.
uint16_t random_half(SplitMix64& rng) {
  const uint64_t r = rng.next();
  const uint16_t sign = (r & 1) ? 0x8000 : 0;
  const uint16_t man = static_cast<uint16_t>((r >> 1) & 0x3FF);
  const int kind = static_cast<int>((r >> 11) % 8);
  const uint16_t exp = kind == 0 ? 0 : kind == 1 ? static_cast<uint16_t>(20 + (r >> 14) % 11)  // up to 2^15
                                                 : static_cast<uint16_t>(1 + (r >> 14) % 15);
  return static_cast<uint16_t>(sign | (exp << 10) | man);
}

// rows x cols (cols a multiple of 32) of ggml type t: random blocks, as a file stores them.
std::vector<uint8_t> random_blocks(uint32_t t, int rows, int cols, SplitMix64& rng) {
  std::vector<uint8_t> b;
  for (int r = 0; r < rows; ++r)
    for (int k = 0; k < cols / 32; ++k) {
      const uint16_t d = random_half(rng);
      b.push_back(static_cast<uint8_t>(d));
      b.push_back(static_cast<uint8_t>(d >> 8));
      if (t == kQ4_1) {
        const uint16_t m = random_half(rng);
        b.push_back(static_cast<uint8_t>(m));
        b.push_back(static_cast<uint8_t>(m >> 8));
      }
      const int qn = t == kQ8_0 ? 32 : 16;
      for (int j = 0; j < qn; ++j) b.push_back(static_cast<uint8_t>(rng.next()));
    }
  return b;
}

StoredMatrix stored(uint32_t t, int rows, int cols, const std::vector<uint8_t>& b, int qk_head_dim = 0) {
  StoredMatrix m;
  m.type = t;
  m.rows = rows;
  m.cols = cols;
  m.data = b.data();
  m.row_bytes = static_cast<size_t>(cols / 32) * block_bytes(t);
  m.qk_head_dim = qk_head_dim;
  return m;
}

// The float32 rows (akv's order) of m, by the reader's dequantization (spec/gguf.md Q3-Q5).
std::vector<float> dense(const StoredMatrix& m) {
  std::vector<float> out(static_cast<size_t>(m.rows) * m.cols);
  for (int r = 0; r < m.rows; ++r)
    readers::dequantize(m.type, {m.row(r), m.row_bytes}, {out.data() + static_cast<size_t>(r) * m.cols, static_cast<size_t>(m.cols)},
                      "test");
  return out;
}

std::string isa_of(cpu::Isa isa) { return cpu::isa_name(isa); }

}  // namespace

// Every format, ISA, row count (the in-register path up to kQuantFusedRows and the computed
// panels above it, past one row block), k with a tail of 32 past the last 64-block, outputs not a multiple of 16
// and panel ranges that start and end inside the matrix: memcmp-equal to the float32 panels.
TEST(K15_QuantPanels, MatmulBitwiseEqualsFloat32PanelsEveryIsa) {
  SplitMix64 rng{1515};
  int cases = 0;
  for (uint32_t t : {kQ4_0, kQ4_1, kQ8_0})
    for (int n : {32, 64, 96, 160, 576})
      for (int d : {1, 7, 16, 33, 70}) {
        const std::vector<uint8_t> b = random_blocks(t, d, n, rng);
        const StoredMatrix s = stored(t, d, n, b);
        const std::vector<float> w = dense(s);
        const cpu::PackedMatrix qp = cpu::pack_stored({&s}, n);
        const cpu::PackedMatrix fp = cpu::pack_rows({&w}, n);
        ASSERT_NE(qp.format, cpu::PanelFormat::kF32);
        ASSERT_EQ(qp.panels(), fp.panels());
        for (int rows : {1, 2, 3, 4, 5, 6, 7, 13, 200}) {
          if (rows == 200 && n > 96) continue;  // past one block of computed panels' rows (192)
          std::vector<float> X(static_cast<size_t>(rows) * (n + 3));
          for (float& x : X) x = static_cast<float>(static_cast<int64_t>(rng.next() % 2001) - 1000) / 997.0f;
          const int p0 = qp.panels() > 2 ? 1 : 0, p1 = qp.panels();
          for (cpu::Isa isa : cpu::supported_isas()) {
            const cpu::Kernels& k = cpu::kernels_for(isa);
            const size_t ldy = static_cast<size_t>(d) + 5;
            std::vector<float> yq(rows * ldy, std::numeric_limits<float>::quiet_NaN()), yf = yq;
            k.matmul(X.data(), n + 3, rows, qp, p0, p1, yq.data(), ldy);
            k.matmul(X.data(), n + 3, rows, fp, p0, p1, yf.data(), ldy);
            ASSERT_EQ(std::memcmp(yq.data(), yf.data(), yq.size() * sizeof(float)), 0)
                << "type " << t << " n " << n << " d " << d << " rows " << rows << " on " << isa_of(isa);
            bool moved = false;  // not vacuous: outputs were written and are not all zero
            for (int r = 0; r < rows; ++r)
              for (int c = p0 * cpu::kLanes; c < d; ++c) moved = moved || (!std::isnan(yq[r * ldy + c]) && yq[r * ldy + c] != 0.0f);
            if (p0 * cpu::kLanes < d) { ASSERT_TRUE(moved) << "type " << t << " n " << n << " d " << d; }
            ++cases;
          }
        }
      }
  std::cout << "[ K15      ] " << cases << " matmuls (format x n x d x rows x ISA) memcmp-equal to float32 panels\n";
}

TEST(K15_QuantPanels, FusedPartsAndQkRowsAsTheFloat32Packing) {
  SplitMix64 rng{7};
  const int n = 96, hd = 8;
  const std::vector<uint8_t> a = random_blocks(kQ4_1, 16, n, rng), b = random_blocks(kQ4_1, 8, n, rng),
                             c = random_blocks(kQ4_1, 3, n, rng);
  const StoredMatrix sa = stored(kQ4_1, 16, n, a, hd), sb = stored(kQ4_1, 8, n, b, hd), sc = stored(kQ4_1, 3, n, c);
  EXPECT_EQ(sa.source_row(1), 2) << "C3: akv row 1 of a head of 8 is file row 2";
  const std::vector<float> wa = dense(sa), wb = dense(sb), wc = dense(sc);
  const cpu::PackedMatrix qp = cpu::pack_stored({&sa, &sb, &sc}, n), fp = cpu::pack_rows({&wa, &wb, &wc}, n);
  std::vector<float> X(3 * n);
  for (float& x : X) x = static_cast<float>(rng.next() % 1000) / 512.0f - 1.0f;
  for (cpu::Isa isa : cpu::supported_isas())
    for (int rows : {1, 3}) {
      std::vector<float> yq(rows * 27, NAN), yf(rows * 27, NAN);
      cpu::kernels_for(isa).matmul(X.data(), n, rows, qp, 0, qp.panels(), yq.data(), 27);
      cpu::kernels_for(isa).matmul(X.data(), n, rows, fp, 0, fp.panels(), yf.data(), 27);
      EXPECT_EQ(std::memcmp(yq.data(), yf.data(), yq.size() * 4), 0) << isa_of(isa) << " rows " << rows;
    }
  const StoredMatrix other = stored(kQ8_0, 3, n, random_blocks(kQ8_0, 3, n, rng));
  EXPECT_THROW(cpu::pack_stored({&sa, &other}, n), std::invalid_argument) << "one format a panel";
  EXPECT_FALSE(cpu::packs_quantized(kF16));
}

namespace {

constexpr int kHidden = 64, kHeads = 2, kKvHeads = 1, kHeadDim = 32, kFfn = 96, kVocab = 40, kLayers = 2;

// A GGUF of architecture `arch` (llama, qwen2, qwen3, gemma3) whose matrices are Q4_0, Q4_1,
// Q8_0 and (one) F16, random blocks; with the variant's vectors (M14-M16) and, for gemma3, a
// sliding window of 8 (both layers sliding, M19).
std::vector<uint8_t> quant_model(SplitMix64& rng, const std::string& arch = "llama") {
  using test::kv;
  test::TestGguf g;
  const std::string P = arch + ".";
  g.kvs = {test::kv_str("general.architecture", arch),
           kv<uint32_t>(P + "embedding_length", 4, kHidden),
           kv<uint32_t>(P + "block_count", 4, kLayers),
           kv<uint32_t>(P + "feed_forward_length", 4, kFfn),
           kv<uint32_t>(P + "context_length", 4, 64),
           kv<uint32_t>(P + "attention.head_count", 4, kHeads),
           kv<uint32_t>(P + "attention.head_count_kv", 4, kKvHeads),
           kv<float>(P + "attention.layer_norm_rms_epsilon", 6, 1e-5f),
           kv<uint32_t>(P + "vocab_size", 4, kVocab)};
  if (arch == "gemma3") {  // global layers at base 1e6, the sliding ones at Gemma's local 1e4 (M19)
    g.kvs.push_back(kv<uint32_t>(P + "attention.sliding_window", 4, 8));
    g.kvs.push_back(kv<float>(P + "rope.freq_base", 6, 1e6f));
  }
  // Scales small enough that the residual stream stays finite through two layers.
  auto small_blocks = [&](uint32_t t, int rows, int cols) {
    std::vector<uint8_t> b = random_blocks(t, rows, cols, rng);
    const size_t bb = block_bytes(t);
    for (size_t o = 0; o < b.size(); o += bb) {
      const uint16_t d = static_cast<uint16_t>((rng.next() & 0x83FF) | (8u << 10));  // +-2^-7 .. 2^-6
      b[o] = static_cast<uint8_t>(d);
      b[o + 1] = static_cast<uint8_t>(d >> 8);
      if (t == kQ4_1) {
        const uint16_t m = static_cast<uint16_t>((rng.next() & 0x83FF) | (6u << 10));
        b[o + 2] = static_cast<uint8_t>(m);
        b[o + 3] = static_cast<uint8_t>(m >> 8);
      }
    }
    return b;
  };
  auto mat = [&](const std::string& name, uint32_t t, int rows, int cols) {
    std::vector<uint8_t> b;
    if (t == kF16)
      for (int i = 0; i < rows * cols; ++i) {
        const uint16_t h = static_cast<uint16_t>((rng.next() & 0x83FF) | (10u << 10));
        b.push_back(static_cast<uint8_t>(h));
        b.push_back(static_cast<uint8_t>(h >> 8));
      }
    else
      b = small_blocks(t, rows, cols);
    g.tensors.push_back({name, {static_cast<uint64_t>(cols), static_cast<uint64_t>(rows)}, t, b});
  };
  auto vec = [&](const std::string& name, int n = kHidden) {
    test::Writer w;
    for (int i = 0; i < n; ++i) w.put(1.0f + static_cast<float>(i) / 64);
    g.tensors.push_back({name, {static_cast<uint64_t>(n)}, 0, w.b});
  };
  mat("token_embd.weight", kQ8_0, kVocab, kHidden);
  for (int l = 0; l < kLayers; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    vec(b + "attn_norm.weight");
    mat(b + "attn_q.weight", kQ4_0, kHeads * kHeadDim, kHidden);
    mat(b + "attn_k.weight", kQ4_0, kKvHeads * kHeadDim, kHidden);
    mat(b + "attn_v.weight", l == 0 ? kQ4_0 : kF16, kKvHeads * kHeadDim, kHidden);  // layer 1: a mixed wqkv
    mat(b + "attn_output.weight", kQ8_0, kHidden, kHeads * kHeadDim);
    vec(b + "ffn_norm.weight");
    mat(b + "ffn_gate.weight", kQ4_1, kFfn, kHidden);
    mat(b + "ffn_down.weight", kQ4_1, kHidden, kFfn);
    mat(b + "ffn_up.weight", kQ4_1, kFfn, kHidden);
    if (arch == "qwen2") {  // M14
      vec(b + "attn_q.bias", kHeads * kHeadDim), vec(b + "attn_k.bias", kKvHeads * kHeadDim);
      vec(b + "attn_v.bias", kKvHeads * kHeadDim);
    }
    if (arch == "qwen3" || arch == "gemma3") vec(b + "attn_q_norm.weight", kHeadDim), vec(b + "attn_k_norm.weight", kHeadDim);
    if (arch == "gemma3") vec(b + "post_attention_norm.weight"), vec(b + "post_ffw_norm.weight");  // M16
  }
  vec("output_norm.weight");
  mat("output.weight", kQ4_1, kVocab, kHidden);
  return g.bytes();
}

}  // namespace

// A GGUF model keeps no float32 matrix; the cpu backend on it (quantized panels, the F16 part
// dequantized for its packing only) gives the logits and caches of the cpu backend on the same
// weights as float32 panels, memcmp-equal, on every ISA; dense_model gives weights_from_gguf's.
TEST(K15_StoredModel, CpuBitwiseEqualsFloat32ModelEveryIsa) {
  SplitMix64 rng{2026};
  const readers::GgufFile f = readers::GgufFile::parse(quant_model(rng), "q.gguf");
  const std::shared_ptr<const Model> m = readers::load_gguf_model(f, "q");
  ASSERT_TRUE(m->stored);
  EXPECT_FALSE(has_dense_weights(*m));
  EXPECT_TRUE(m->weights.tok_emb.empty());
  for (const auto& L : m->weights.layers) {
    EXPECT_TRUE(L.wq.empty() && L.wk.empty() && L.wv.empty() && L.wo.empty() && L.w1.empty() && L.w2.empty() && L.w3.empty());
    EXPECT_EQ(L.attn_norm.size(), static_cast<size_t>(kHidden));
  }
  // dense_model: exactly weights_from_gguf's float32 (the reference's weights).
  const std::shared_ptr<const Model> dm = dense_model(m);
  const Weights<float> w = readers::weights_from_gguf(f, m->config);
  auto same = [](const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * 4) == 0;
  };
  EXPECT_TRUE(same(dm->weights.tok_emb, w.tok_emb));
  EXPECT_TRUE(same(dm->weights.wcls, w.wcls));
  for (int l = 0; l < kLayers; ++l) {
    const auto &a = dm->weights.layers[l], &b = w.layers[l];
    EXPECT_TRUE(same(a.wq, b.wq) && same(a.wk, b.wk) && same(a.wv, b.wv) && same(a.wo, b.wo) && same(a.w1, b.w1) &&
                same(a.w2, b.w2) && same(a.w3, b.w3))
        << "layer " << l;
  }
  EXPECT_EQ(dense_model(m).get(), dm.get()) << "made once while held";
  // The float32 model, no stored blocks: the cpu backend packs float32 panels from it.
  auto f32 = std::make_shared<Model>();
  f32->config = m->config;
  f32->weights = w;
  f32->rope = m->rope;
  const auto pq = cpu::packed_model(m);
  EXPECT_EQ(pq->layers[0].wqkv.format, cpu::PanelFormat::kQ4_0);
  EXPECT_EQ(pq->layers[1].wqkv.format, cpu::PanelFormat::kF32) << "a mixed wqkv: float32 panels";
  EXPECT_EQ(pq->layers[0].wo.format, cpu::PanelFormat::kQ8_0);
  EXPECT_EQ(pq->layers[0].w13.format, cpu::PanelFormat::kQ4_1);
  EXPECT_EQ(pq->wcls.format, cpu::PanelFormat::kQ4_1);
  std::vector<Token> tokens;
  for (int i = 0; i < 45; ++i) tokens.push_back(static_cast<Token>(rng.next() % kVocab));
  for (cpu::Isa isa : cpu::supported_isas()) {
    std::vector<float> lq, lf;
    std::vector<float> kq, kf;
    for (int which = 0; which < 2; ++which) {
      auto b = cpu::make_cpu_backend(which == 0 ? m : std::shared_ptr<const Model>(f32), {cpu::isa_name(isa), 2});
      KVCache cache(m->config);
      std::vector<float>& logits = which == 0 ? lq : lf;
      logits.assign(tokens.size() * kVocab, NAN);
      // prefill of 40 (computed panels), then decode one by one (in-register weights)
      b->forward_rows(cache, std::span<const Token>(tokens.data(), 40), RowList{},
                      std::span<float>(logits.data(), 40 * kVocab));
      for (size_t i = 40; i < tokens.size(); ++i)
        b->forward_rows(cache, std::span<const Token>(&tokens[i], 1), RowList{},
                        std::span<float>(logits.data() + i * kVocab, kVocab));
      std::vector<float>& kv = which == 0 ? kq : kf;
      for (int l = 0; l < kLayers; ++l) kv.insert(kv.end(), cache.k(l), cache.k(l) + tokens.size() * m->config.kv_dim());
    }
    bool finite = true;
    for (float x : lq) finite = finite && std::isfinite(x);
    EXPECT_TRUE(finite) << "the drawn model must keep its logits finite, or the comparison proves little";
    EXPECT_EQ(std::memcmp(lq.data(), lf.data(), lq.size() * 4), 0) << "logits on " << isa_of(isa);
    EXPECT_EQ(std::memcmp(kq.data(), kf.data(), kq.size() * 4), 0) << "keys on " << isa_of(isa);
  }
}

// The block variants kept as the file stores them (K15 with M14-M20): qwen2's biases, qwen3's
// QK-norms, gemma3's QK-norms, post-norms, embedding scale and sliding window with its own RoPE
// base are read beside the stored matrices, so the cpu backend on the stored model gives the
// float32 model's bits, and dense_model (the reference's weights) keeps every vector.
TEST(K15_StoredModel, BlockVariantsKeepTheirVectors) {
  for (const std::string arch : {"qwen2", "qwen3", "gemma3"}) {
    SplitMix64 rng{77};
    const readers::GgufFile f = readers::GgufFile::parse(quant_model(rng, arch), arch + ".gguf");
    const std::shared_ptr<const Model> m = readers::load_gguf_model(f, arch);
    ASSERT_TRUE(m->stored) << arch;
    auto f32 = std::make_shared<Model>();
    f32->config = m->config;
    f32->weights = readers::weights_from_gguf(f, m->config);
    f32->rope = m->rope;
    f32->rope_local = m->rope_local;
    EXPECT_EQ(f32->config.qkv_bias, arch == "qwen2");
    EXPECT_EQ(f32->config.qk_norm, arch != "qwen2");
    EXPECT_EQ(f32->config.sliding_window > 0, arch == "gemma3");
    EXPECT_EQ(m->rope_local != nullptr, arch == "gemma3") << "gemma3's sliding layers have their own base";
    const auto& L0 = m->weights.layers[0];
    EXPECT_EQ(L0.bq.size(), arch == "qwen2" ? static_cast<size_t>(kHeads * kHeadDim) : 0u) << arch;
    EXPECT_EQ(L0.q_norm.size(), arch == "qwen2" ? 0u : static_cast<size_t>(kHeadDim)) << arch;
    EXPECT_EQ(L0.post_ffn_norm.size(), arch == "gemma3" ? static_cast<size_t>(kHidden) : 0u) << arch;
    const std::shared_ptr<const Model> dm = dense_model(m);
    EXPECT_EQ(dm->rope_local, m->rope_local);
    std::vector<Token> tokens;
    for (int i = 0; i < 30; ++i) tokens.push_back(static_cast<Token>(rng.next() % kVocab));
    auto logits = [&](std::unique_ptr<Backend> b) {
      KVCache cache(m->config);
      std::vector<float> out(tokens.size() * kVocab, NAN);
      b->forward_rows(cache, std::span<const Token>(tokens.data(), 20), RowList{}, std::span<float>(out.data(), 20 * kVocab));
      for (size_t i = 20; i < tokens.size(); ++i)
        b->forward_rows(cache, std::span<const Token>(&tokens[i], 1), RowList{},
                        std::span<float>(out.data() + i * kVocab, kVocab));
      return out;
    };
    const std::vector<float> want = logits(make_reference_backend(f32));
    bool finite = true;
    for (float x : want) finite = finite && std::isfinite(x);
    ASSERT_TRUE(finite) << arch << ": the drawn model must keep its logits finite";
    const std::vector<float> ref = logits(make_reference_backend(m));  // through dense_model
    EXPECT_EQ(std::memcmp(ref.data(), want.data(), want.size() * 4), 0) << arch << ": reference on the stored model";
    for (cpu::Isa isa : cpu::supported_isas()) {
      const std::vector<float> a = logits(cpu::make_cpu_backend(m, {cpu::isa_name(isa), 2}));
      const std::vector<float> b = logits(cpu::make_cpu_backend(std::shared_ptr<const Model>(f32), {cpu::isa_name(isa), 2}));
      EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * 4), 0) << arch << " on " << isa_of(isa);
    }
  }
}
