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
  // Every output is dot_chain(W row, X row) whatever M, the tile sizes, or which other rows
  // (another session's tokens) share the launch.
  const int n = 300, d = 77;
  const auto X = reals(static_cast<size_t>(200) * n, 3, 2.0f), W = reals(static_cast<size_t>(d) * n, 4, 0.1f);
  std::vector<float> chain(static_cast<size_t>(200) * d);
  for (int m = 0; m < 200; ++m)
    for (int i = 0; i < d; ++i)
      chain[static_cast<size_t>(m) * d + i] = cuda::dot_chain(W.data() + static_cast<size_t>(i) * n, X.data() + static_cast<size_t>(m) * n, n);
  EXPECT_TRUE(same_bits(gemm(X, W, 200, n, d), chain));
  for (emu::GemmTiles t : {emu::GemmTiles{1, 1, 1}, {16, 128, 7}, {128, 8, 64}, {3, 5, 300}})
    EXPECT_TRUE(same_bits(gemm(X, W, 200, n, d, t), chain)) << t.bm << "," << t.bn << "," << t.bk;
  // Row 150 alone, and rows 100..199 in a launch of their own: the same bits.
  const std::vector<float> row(X.begin() + 150 * n, X.begin() + 151 * n), tail(X.begin() + 100 * n, X.end());
  EXPECT_TRUE(same_bits(gemm(row, W, 1, n, d), std::vector<float>(chain.begin() + 150 * d, chain.begin() + 151 * d)));
  EXPECT_TRUE(same_bits(gemm(tail, W, 100, n, d), std::vector<float>(chain.begin() + 100 * d, chain.end())));
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
