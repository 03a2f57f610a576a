// The CUDA kernels' per-output arithmetic, run on the CPU through the same __host__ __device__
// functions (spec/kernels-cuda.md G2-G5): the fixed orders are the documented ones, and nothing
// depends on rows, tiles or chunk boundaries. The checks every backend shares (the reference's
// bits on exact inputs, G4, G6, and G11: every op within the proven bounds of the reference)
// are written once in verify/check/op_props and op_checks and run on cuda-emu by test_op_checks.cpp; the device
// runs the same bits (G10).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "harness_support.hpp"
#include "optimized/cuda/arith/attention.hpp"
#include "optimized/cuda/arith/gemm.hpp"
#include "optimized/cuda/arith/rmsnorm.hpp"
#include "optimized/cuda/emu/emu_ops.hpp"
#include "reference/ops.hpp"

using namespace akv;
namespace emu = akv::cuda::emu;
using test::same_bits;

namespace {

// Deterministic arbitrary floats of magnitude about `scale` (integer / 2^k plus odd low bits).
std::vector<float> reals(size_t n, uint32_t seed, float scale) {
  std::vector<float> v(n);
  uint32_t x = seed * 2891336453u + 7;
  for (auto& f : v) {
    x = x * 1664525u + 1013904223u;
    f = scale * (static_cast<float>(x >> 8) / 8388608.0f - 1.0f);
  }
  return v;
}

std::vector<float> gemm(const std::vector<float>& X, const std::vector<float>& W, int M, int n, int d,
                        emu::GemmTiles t = {}) {
  std::vector<float> out(static_cast<size_t>(M) * d, NAN);
  emu::gemm(out.data(), X.data(), W.data(), M, n, d, t);
  return out;
}

}  // namespace

// --- G2: matmul ------------------------------------------------------------------------------

TEST(G2_Matmul, ProductsEnterTheChainWithOneRounding) {
  // x = (-1, 1+2^-12), w = (1, 1+2^-12): the exact dot product is 2^-11 + 2^-24. The fma chain
  // keeps it; the reference's separate multiply rounds (1+2^-12)^2 to 1 + 2^-11 first.
  const float e = 1.0f + std::ldexp(1.0f, -12);
  const std::vector<float> X{-1.0f, e}, W{1.0f, e};
  EXPECT_EQ(gemm(X, W, 1, 2, 1)[0], std::ldexp(1.0f, -11) + std::ldexp(1.0f, -24));
  float ref = 0;
  ref::matmul(&ref, X.data(), W.data(), 2, 1);
  EXPECT_EQ(ref, std::ldexp(1.0f, -11));
}

TEST(G2_Matmul, RowsTilesAndBatchDoNotMatter) {
  // Every output is dot_splitk(W row, X row, n, d) whatever M, the tile sizes, or which other
  // rows (another session's tokens) share the launch. n = 300, d = 77: 7 chunks of 48 and 12.
  const int n = 300, d = 77;
  ASSERT_EQ(cuda::splitk_chunks(n, d), 7);
  const auto X = reals(static_cast<size_t>(200) * n, 3, 2.0f), W = reals(static_cast<size_t>(d) * n, 4, 0.1f);
  std::vector<float> split(static_cast<size_t>(200) * d), chain(split.size());
  for (int m = 0; m < 200; ++m)
    for (int i = 0; i < d; ++i) {
      const float* w = W.data() + static_cast<size_t>(i) * n;
      const float* x = X.data() + static_cast<size_t>(m) * n;
      split[static_cast<size_t>(m) * d + i] = cuda::dot_splitk(w, x, n, d);
      chain[static_cast<size_t>(m) * d + i] = cuda::dot_chain(w, x, n);
    }
  EXPECT_TRUE(same_bits(gemm(X, W, 200, n, d), split));
  EXPECT_FALSE(same_bits(split, chain)) << "the split order must differ from the single chain somewhere";
  for (emu::GemmTiles t : {emu::GemmTiles{1, 1, 1}, {16, 128, 7}, {128, 8, 64}, {3, 5, 300}})
    EXPECT_TRUE(same_bits(gemm(X, W, 200, n, d, t), split)) << t.bm << "," << t.bn << "," << t.bk;
  // Row 150 alone, and rows 100..199 in a launch of their own: the same bits.
  const std::vector<float> row(X.begin() + 150 * n, X.begin() + 151 * n), tail(X.begin() + 100 * n, X.end());
  EXPECT_TRUE(same_bits(gemm(row, W, 1, n, d), std::vector<float>(split.begin() + 150 * d, split.begin() + 151 * d)));
  EXPECT_TRUE(same_bits(gemm(tail, W, 100, n, d), std::vector<float>(split.begin() + 100 * d, split.end())));
}

TEST(G2_Matmul, WideOutputsKeepTheSingleChain) {
  // d > kSplitKMaxD: one chunk, the plain chain, for every M and tile size.
  const int n = 200, d = cuda::kSplitKMaxD + 3, M = 3;
  ASSERT_EQ(cuda::splitk_chunks(n, d), 1);
  const auto X = reals(static_cast<size_t>(M) * n, 8, 2.0f), W = reals(static_cast<size_t>(d) * n, 9, 0.1f);
  std::vector<float> chain(static_cast<size_t>(M) * d);
  for (int m = 0; m < M; ++m)
    for (int i = 0; i < d; ++i)
      chain[static_cast<size_t>(m) * d + i] = cuda::dot_chain(W.data() + static_cast<size_t>(i) * n, X.data() + static_cast<size_t>(m) * n, n);
  EXPECT_TRUE(same_bits(gemm(X, W, M, n, d), chain));
  EXPECT_TRUE(same_bits(gemm(X, W, M, n, d, {2, 9, 5}), chain));
}

TEST(G2_Matmul, SplitKAddsTheChunkSumsInChunkOrder) {
  // n = 32, d = 1: two chunks of 16. x = (2^24, 1 x 31), w = 1. The single chain rounds each
  // +1 to 2^24 back to 2^24 (ties to even): 2^24. Chunk 0 gives 2^24 too, chunk 1 gives 16
  // exactly, and their sum 2^24 + 16 is exact. The device and the emulation must give the
  // latter; an emulation without the split gives the former and fails here.
  ASSERT_EQ(cuda::splitk_chunks(32, 1), 2);
  ASSERT_EQ(cuda::splitk_len(32, 1), 16);
  std::vector<float> x(32, 1.0f), w(32, 1.0f);
  x[0] = 16777216.0f;
  EXPECT_EQ(cuda::dot_chain(w.data(), x.data(), 32), 16777216.0f);
  EXPECT_EQ(cuda::dot_splitk(w.data(), x.data(), 32, 1), 16777216.0f + 16.0f);
  EXPECT_EQ(gemm(x, w, 1, 32, 1)[0], 16777216.0f + 16.0f);
  // Order of the chunk sums: p = (2^24, 1, 1) in chunk order is 2^24 (each +1 a tie to even);
  // a tree or a reversed order would give 2^24 + 2.
  const float p[3] = {16777216.0f, 1.0f, 1.0f};
  EXPECT_EQ(cuda::splitk_combine(p, 1, 3), 16777216.0f);
}

TEST(G2_Matmul, TheSplitIsAFunctionOfNAndDWithNonemptyChunks) {
  // The model shapes: SmolLM2-135M (hidden 576, kv 192, FFN 1536, vocab 49152), `bench`
  // (768, 256, 2048, vocab 288), `small` and `tiny`.
  EXPECT_EQ(cuda::splitk_chunks(1536, 576), 8);   // SmolLM2 down: 8 x 192
  EXPECT_EQ(cuda::splitk_len(1536, 576), 192);
  EXPECT_EQ(cuda::splitk_chunks(576, 192), 8);    // SmolLM2 k/v: 7 x 80 + 16
  EXPECT_EQ(cuda::splitk_chunks(576, 1536), 1);   // gate/up: wide, one chain
  EXPECT_EQ(cuda::splitk_chunks(576, 49152), 1);  // SmolLM2 logits: wide
  EXPECT_EQ(cuda::splitk_chunks(2048, 768), 8);   // bench down: 8 x 256
  EXPECT_EQ(cuda::splitk_len(2048, 768), 256);
  EXPECT_EQ(cuda::splitk_chunks(768, 288), 8);    // bench logits: 8 x 96
  EXPECT_EQ(cuda::splitk_chunks(688, 256), 8);    // small down: 7 x 96 + 16
  EXPECT_EQ(cuda::splitk_chunks(32, 288), 2);     // tiny logits: 2 x 16
  EXPECT_EQ(cuda::splitk_chunks(16, 32), 1);      // n <= kSplitKAlign: one chain
  EXPECT_EQ(cuda::splitk_chunks(0, 32), 1);
  // For every n up to 20000: 1 <= S <= 8, chunks nonempty, aligned starts, and the rounding
  // count of spec/bounds.md B1's proof for the split order, L + S - 1 <= n.
  for (int d : {1, 77, 288, cuda::kSplitKMaxD, cuda::kSplitKMaxD + 1})
    for (int n = 0; n <= 20000; ++n) {
      const int L = cuda::splitk_len(n, d), S = cuda::splitk_chunks(n, d);
      ASSERT_GE(S, 1);
      ASSERT_LE(S, cuda::kSplitKMaxChunks);
      if (n == 0) continue;
      ASSERT_GT(n - (S - 1) * L, 0) << n << "," << d;  // the last chunk is nonempty
      ASSERT_LE(n - (S - 1) * L, L) << n << "," << d;
      ASSERT_LE(L + S - 1, n) << n << "," << d;
      if (S > 1) {
        ASSERT_EQ(L % cuda::kSplitKAlign, 0) << n << "," << d;
      }
      if (d > cuda::kSplitKMaxD || n <= cuda::kSplitKAlign) {
        ASSERT_EQ(S, 1) << n << "," << d;
      }
    }
}

// --- G3: RMSNorm ------------------------------------------------------------------------------

TEST(G3_RmsNorm, SumOfSquaresUsesTheFixedTree) {
  // x = (2^12, 1, ..., 1), n = 32: squares 2^24, then 31 ones. Left to right (the reference),
  // each +1 is a tie that rounds back to 2^24. The tree: 2^24+1 -> 2^24 at step 16, then
  // +2, +4, +8, +16 from the other lanes: 2^24 + 30.
  std::vector<float> x(32, 1.0f);
  x[0] = 4096.0f;
  EXPECT_EQ(cuda::rms_sumsq(x.data(), 32), 16777216.0f + 30.0f);
  float seq = 0;
  for (float v : x) seq = seq + v * v;
  EXPECT_EQ(seq, 16777216.0f);
}

TEST(G3_RmsNorm, RowsDoNotMatter) {
  const int n = 256, M = 9;
  const auto x = reals(static_cast<size_t>(M) * n, 5, 3.0f), w = reals(n, 6, 1.0f);
  std::vector<float> all(static_cast<size_t>(M) * n), one(n);
  emu::rmsnorm_rows(all.data(), x.data(), w.data(), M, n, 1e-5f);
  emu::rmsnorm_rows(one.data(), x.data() + 4 * n, w.data(), 1, n, 1e-5f);
  EXPECT_TRUE(same_bits(one, std::vector<float>(all.begin() + 4 * n, all.begin() + 5 * n)));
}

// --- G5: attention -----------------------------------------------------------------------------

namespace {

// Reference attention for every head of one query row at position p (GQA).
std::vector<float> ref_attention_row(const std::vector<float>& q, const std::vector<float>& k, const std::vector<float>& v,
                                     int p, int heads, int kv_heads, int hd) {
  std::vector<float> out(static_cast<size_t>(heads) * hd), att(p + 1);
  for (int h = 0; h < heads; ++h) {
    const size_t off = static_cast<size_t>(h / (heads / kv_heads)) * hd;
    ref::attention_head(out.data() + h * hd, q.data() + h * hd, k.data() + off, v.data() + off, p + 1, kv_heads * hd, hd, att.data());
  }
  return out;
}

std::vector<float> attention(const std::vector<float>& q, const std::vector<float>& k, const std::vector<float>& v,
                             int M, int pos0, int heads, int kv_heads, int hd) {
  std::vector<float> out(static_cast<size_t>(M) * heads * hd, NAN);
  emu::attention_rows(out.data(), q.data(), k.data(), v.data(), M, pos0, heads, kv_heads, hd);
  return out;
}

}  // namespace

TEST(G5_Attention, SplitsAreAnchoredAtPositionZeroNotAtTheCall) {
  // Query rows at positions 0..299 computed in one call, in calls starting at 37, 64 and 250,
  // and one row at a time: the same bits for every row (the splits are the row's own).
  const int heads = 4, kvh = 2, hd = 8, n = 300, qd = heads * hd;
  const auto q = reals(static_cast<size_t>(n) * qd, 1, 1.5f), k = reals(static_cast<size_t>(n) * kvh * hd, 2, 1.5f),
             v = reals(static_cast<size_t>(n) * kvh * hd, 3, 1.0f);
  const auto all = attention(q, k, v, n, 0, heads, kvh, hd);
  for (int pos0 : {37, 64, 250, 299}) {
    const std::vector<float> qs(q.begin() + static_cast<size_t>(pos0) * qd, q.end());
    const auto part = attention(qs, k, v, n - pos0, pos0, heads, kvh, hd);
    EXPECT_TRUE(same_bits(part, std::vector<float>(all.begin() + static_cast<size_t>(pos0) * qd, all.end()))) << pos0;
  }
  // And the rows differ from the reference's order (so the comparison above is not vacuous).
  EXPECT_FALSE(same_bits(std::vector<float>(all.end() - qd, all.end()), ref_attention_row(std::vector<float>(q.end() - qd, q.end()), k, v, n - 1, heads, kvh, hd)));
}
