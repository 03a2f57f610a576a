// The CUDA kernels' per-output arithmetic, run on the CPU through the same __host__ __device__
// functions (spec/kernels-cuda.md G2-G6): exact cases equal the reference bitwise, the fixed
// orders are the documented ones, and nothing depends on rows, tiles or chunk boundaries.
// G11: every op within the proven bounds of the reference (spec/bounds.md B10, B14) on
// identical inputs, random and adversarial; the device runs the same bits (G10).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "cross_support.hpp"
#include "harness_support.hpp"
#include "optimized/cuda/arith/attention.hpp"
#include "optimized/cuda/arith/elementwise.hpp"
#include "optimized/cuda/arith/rmsnorm.hpp"
#include "optimized/cuda/emu/emu_ops.hpp"
#include "reference/ops.hpp"
#include "reference/rope.hpp"
#include "verify/bounds/op_bounds.hpp"
#include "verify/oracle/exact_sum.hpp"

using namespace akv;
namespace emu = akv::cuda::emu;
using test::same_bits;

namespace {

// Deterministic values: small integers in [-r, r] (exact products and sums), or arbitrary
// floats of magnitude about `scale` (integer / 2^k plus odd low bits).
std::vector<float> ints(size_t n, uint32_t seed, int r) {
  std::vector<float> v(n);
  uint32_t x = seed * 747796405u + 1;
  for (auto& f : v) {
    x = x * 1664525u + 1013904223u;
    f = static_cast<float>(static_cast<int>((x >> 8) % (2 * r + 1)) - r);
  }
  return v;
}
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

TEST(G2_Matmul, IntegerInputsEqualTheReferenceBitwise) {
  // Exact in any order: the GEMM's tiles and fma chain give the reference's bits. Shapes not
  // multiples of the tiles (edges in M, d and k) and multiples.
  for (auto [M, n, d] : {std::tuple{1, 32, 64}, {3, 17, 5}, {70, 100, 130}, {128, 64, 64}, {65, 688, 31}}) {
    const auto X = ints(static_cast<size_t>(M) * n, M + n, 7), W = ints(static_cast<size_t>(d) * n, d, 5);
    std::vector<float> ref(static_cast<size_t>(M) * d);
    for (int m = 0; m < M; ++m) ref::matmul(ref.data() + static_cast<size_t>(m) * d, X.data() + static_cast<size_t>(m) * n, W.data(), n, d);
    EXPECT_TRUE(same_bits(gemm(X, W, M, n, d), ref)) << M << "x" << n << "x" << d;
  }
}

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

TEST(G3_RmsNorm, IntegerInputsEqualTheReferenceBitwise) {
  for (int n : {1, 8, 31, 32, 33, 256, 688}) {
    const auto x = ints(n, n, 9), w = reals(n, n + 1, 1.5f);
    std::vector<float> ours(n), ref(n);
    emu::rmsnorm_rows(ours.data(), x.data(), w.data(), 1, n, 1e-5f);
    ref::rmsnorm(ref.data(), x.data(), w.data(), n, 1e-5f);
    EXPECT_TRUE(same_bits(ours, ref)) << n;
  }
}

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

// --- G4: RoPE ----------------------------------------------------------------------------------

TEST(G4_Rope, TheReferenceSequenceOnTheOneTable) {
  const int heads = 3, hd = 32, M = 40, pos0 = 1000;
  const RopeTable t = make_rope_table(hd, 10000.0f, 2048);
  auto x = reals(static_cast<size_t>(M) * heads * hd, 8, 4.0f), ref = x;
  emu::rope_rows(x.data(), M, heads, hd, pos0, t.cos.data(), t.sin.data());
  for (int r = 0; r < M; ++r) ref::rope(ref.data() + static_cast<size_t>(r) * heads * hd, heads, hd, t.cos_at(pos0 + r), t.sin_at(pos0 + r));
  EXPECT_TRUE(same_bits(x, ref));
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

TEST(G5_Attention, UniformScoresEqualTheReferenceBitwise) {
  // q = 0: every score 0, every weight 1/n. For n a power of two the reference's weights and
  // weighted sums of integer values are exact, and so is ours (sum of integers, then / n),
  // across one split and up to eight.
  const int heads = 4, kvh = 2, hd = 8;
  for (int n : {1, 2, 4, 64, 128, 256, 512}) {
    const auto k = reals(static_cast<size_t>(n) * kvh * hd, n, 1.0f), v = ints(static_cast<size_t>(n) * kvh * hd, n + 3, 50);
    const std::vector<float> q(heads * hd, 0.0f);
    EXPECT_TRUE(same_bits(attention(q, k, v, 1, n - 1, heads, kvh, hd), ref_attention_row(q, k, v, n - 1, heads, kvh, hd))) << n;
  }
}

TEST(G5_Attention, OneDominantKeyEqualsTheReferenceInEverySplit) {
  // One key's score exceeds all others by more than 104: every other weight is exp(<-104) = 0,
  // in the reference and in every split and merge weight here, so the output is that key's
  // value row exactly. The key is placed in the first, a middle and the last (partial) split.
  const int heads = 2, kvh = 1, hd = 16, n = 300;
  const std::vector<float> q(heads * hd, 1.0f);
  for (int hot : {0, 63, 64, 200, 299}) {
    auto k = ints(static_cast<size_t>(n) * hd, hot, 2);
    for (int i = 0; i < hd; ++i) k[static_cast<size_t>(hot) * hd + i] = 200.0f;  // score 3200 / 4 = 800
    const auto v = reals(static_cast<size_t>(n) * hd, hot + 1, 5.0f);
    const auto ours = attention(q, k, v, 1, n - 1, heads, kvh, hd);
    EXPECT_TRUE(same_bits(ours, ref_attention_row(q, k, v, n - 1, heads, kvh, hd))) << hot;
    EXPECT_EQ(std::memcmp(ours.data(), v.data() + static_cast<size_t>(hot) * hd, hd * sizeof(float)), 0) << hot;
  }
}

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

// --- G6: elementwise ---------------------------------------------------------------------------

TEST(G6_Elementwise, SwigluAndResidualAreTheReferenceOps) {
  const auto g = reals(4096, 9, 30.0f), u = reals(4096, 10, 3.0f);
  std::vector<float> ref(4096), ours(4096), x = u, xr = u;
  ref::swiglu(ref.data(), g.data(), u.data(), 4096);
  for (size_t i = 0; i < g.size(); ++i) ours[i] = cuda::swiglu(g[i], u[i]), x[i] = cuda::residual(x[i], g[i]);
  ref::add_inplace(xr.data(), g.data(), 4096);
  EXPECT_TRUE(same_bits(ours, ref));
  EXPECT_TRUE(same_bits(x, xr));
}

// --- G11: within the proven bounds of the reference (B10: |emu - ref| <= B_ref + B_emu) --------

using test::check_property;
using test::Closeness;
using test::Fam;
using test::fam_values;

TEST(G11_WithinBounds, GemmRowsAndScoresWithinTwiceB1AndB4) {
  // G2's fma chain against the reference's left-to-right sum: within 2 B1, and within B1 of
  // the exact value (GMP) for the first output; G5's scores dot_chain(q, k) * scale within
  // 2 B4 of the reference's.
  Closeness mm, sc;
  check_property("G11_WithinBounds/Gemm", [&] {
    const Fam f = *test::gen_fam();
    const int n = *test::gen_length(), d = *rc::gen::inRange(1, 41), M = *rc::gen::inRange(1, 4);
    const uint64_t seed = *rc::gen::inRange<uint64_t>(0, 1u << 30);
    const auto X = fam_values(f, static_cast<size_t>(M) * n, seed), W = fam_values(f, static_cast<size_t>(d) * n, seed + 1);
    const auto Y = gemm(X, W, M, n, d);
    std::vector<float> R(Y.size());
    for (int m = 0; m < M; ++m) ref::matmul(R.data() + static_cast<size_t>(m) * d, X.data() + static_cast<size_t>(m) * n, W.data(), n, d);
    for (int m = 0; m < M; ++m)
      for (int i = 0; i < d; ++i) {
        const size_t o = static_cast<size_t>(m) * d + i;
        const double b = bounds::dot_bound(W.data() + static_cast<size_t>(i) * n, 1, X.data() + static_cast<size_t>(m) * n, 1, n);
        RC_ASSERT(std::isfinite(b));
        RC_ASSERT(mm.add(Y[o], R[o], 2 * b));
      }
    RC_ASSERT(oracle::dot_abs_err_up(Y[0], X.data(), 1, W.data(), 1, n) <= bounds::dot_bound(X.data(), 1, W.data(), 1, n));
    // Scores: q = the first row of X, k = the first row of W, head_dim n.
    const std::vector<float> q(X.begin(), X.begin() + n), k(W.begin(), W.begin() + n);
    const float s = cuda::dot_chain(q.data(), k.data(), n) * cuda::attn_scale(n);
    const float rs = R[0] * (1.0f / std::sqrt(static_cast<float>(n)));  // the reference's score (M9)
    RC_ASSERT(sc.add(s, rs, 2 * bounds::score_bound(q, k)));
  });
  mm.print("cuda-emu G11 gemm rows (B1)");
  sc.print("cuda-emu G11 scores (B4)");
  EXPECT_GT(mm.nonzero, 0) << "random inputs should show the fma order";
}

TEST(G11_WithinBounds, RmsNormWithinTwiceB2) {
  Closeness c;
  check_property("G11_WithinBounds/RmsNorm", [&] {
    const Fam f = *test::gen_fam();
    const int n = *test::gen_length();
    const float eps = *rc::gen::element(1e-5f, 1e-6f);
    const uint64_t seed = *rc::gen::inRange<uint64_t>(0, 1u << 30);
    const auto x = fam_values(f, n, seed), w = fam_values(Fam::kPlain, n, seed + 1);
    std::vector<float> a(n), b(n);
    emu::rmsnorm_rows(a.data(), x.data(), w.data(), 1, n, eps);
    ref::rmsnorm(b.data(), x.data(), w.data(), n, eps);
    const auto B = bounds::rmsnorm_bounds(x, w, eps);
    for (int j = 0; j < n; ++j) {
      RC_ASSERT(std::isfinite(B[j]));
      RC_ASSERT(c.add(a[j], b[j], 2 * B[j]));
    }
  });
  c.print("cuda-emu G11 RMSNorm (B2)");
  EXPECT_GT(c.nonzero, 0);
}

TEST(G11_WithinBounds, RopeAndSwigluAreBitwiseTheReference) {
  // B3 and B8 hold trivially: G4 and G6 are the reference's operations, bit for bit.
  static const RopeTable t = make_rope_table(64, 10000.0f, 4096);
  check_property("G11_WithinBounds/RopeSwiglu", [&] {
    const Fam f = *test::gen_fam();
    const uint64_t seed = *rc::gen::inRange<uint64_t>(0, 1u << 30);
    const int pos = *rc::gen::inRange(0, 4096);
    auto x = fam_values(f, 3 * 64, seed), y = x;
    emu::rope_rows(x.data(), 1, 3, 64, pos, t.cos.data(), t.sin.data());
    ref::rope(y.data(), 3, 64, t.cos_at(pos), t.sin_at(pos));
    RC_ASSERT(check::same_bits(x, y));
    const int n = *rc::gen::inRange(1, 700);
    const float gs = *rc::gen::element(1.0f, 20.0f, 100.0f);
    const auto g = fam_values(f, n, seed + 1, gs), u = fam_values(Fam::kPlain, n, seed + 2);
    std::vector<float> a(n), b(n);
    for (int j = 0; j < n; ++j) a[j] = cuda::swiglu(g[j], u[j]);
    ref::swiglu(b.data(), g.data(), u.data(), n);
    RC_ASSERT(check::same_bits(a, b));
  });
}

TEST(G11_WithinBounds, AttentionHeadWithinB14ReferencePlusSplit) {
  // G5's split-KV partials and merge against the reference's three passes: every output
  // element within B14(reference) + B14(split) (spec/bounds.md B14), up to 4096 keys.
  Closeness c;
  check_property("G11_WithinBounds/Attention", [&] {
    const test::AttnInput a = test::gen_attn_input();
    std::vector<float> opt(a.d), ref(a.d), att(a.n);
    emu::attention_rows(opt.data(), a.q.data(), a.k.data(), a.v.data(), 1, a.n - 1, 1, 1, a.d);
    ref::attention_head(ref.data(), a.q.data(), a.k.data(), a.v.data(), a.n, a.d, a.d, att.data());
    const auto br = bounds::attention_bounds(a.q.data(), a.k.data(), a.v.data(), a.n, a.d, a.d,
                                             bounds::attn_rounding_reference(a.n));
    const auto bs = bounds::attention_bounds(a.q.data(), a.k.data(), a.v.data(), a.n, a.d, a.d,
                                             bounds::attn_rounding_split(a.n, cuda::kKvSplit));
    for (int i = 0; i < a.d; ++i) {
      RC_ASSERT(std::isfinite(br[i]) && std::isfinite(bs[i]));
      RC_ASSERT(c.add(opt[i], ref[i], br[i] + bs[i]));
    }
  });
  c.print("cuda-emu G11 attention head (B14)");
  EXPECT_GT(c.nonzero, 0);
}

TEST(G11_WithinBounds, LogitsWithinTwiceB9) {
  // Final RMSNorm (G3) then the output GEMM (G2) against the reference's: within 2 B9.
  Closeness c;
  check_property("G11_WithinBounds/Logits", [&] {
    const Fam f = *test::gen_fam();
    const int n = *test::gen_length(), vocab = *rc::gen::inRange(1, 65);
    const uint64_t seed = *rc::gen::inRange<uint64_t>(0, 1u << 30);
    const auto x = fam_values(f, n, seed), wn = fam_values(Fam::kPlain, n, seed + 1),
               W = fam_values(Fam::kPlain, static_cast<size_t>(vocab) * n, seed + 2);
    std::vector<float> y(n), yr(n), Lr(vocab);
    emu::rmsnorm_rows(y.data(), x.data(), wn.data(), 1, n, 1e-5f);
    const auto L = gemm(y, W, 1, n, vocab);
    ref::rmsnorm(yr.data(), x.data(), wn.data(), n, 1e-5f);
    ref::matmul(Lr.data(), yr.data(), W.data(), n, vocab);
    const auto B = bounds::logits_bounds(x, wn, 1e-5f, W, vocab);
    for (int i = 0; i < vocab; ++i) {
      RC_ASSERT(std::isfinite(B[i]));
      RC_ASSERT(c.add(L[i], Lr[i], 2 * B[i]));
    }
  });
  c.print("cuda-emu G11 logits (B9)");
}
