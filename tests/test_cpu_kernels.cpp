// The CPU kernels against the orders of spec/kernels-cpu.md (K1-K7, K12), on every ISA the
// machine has. Each spec_* below is the clause's text written as plain scalar code, apart from
// the kernels; equality is memcmp. K12: every op within the proven bounds of the reference
// (spec/bounds.md B10, B14) on identical inputs, random and adversarial.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <iostream>
#include <limits>
#include <vector>

#include "cpu_support.hpp"
#include "cross_support.hpp"
#include "optimized/cpu/kernels.hpp"
#include "reference/exp.hpp"
#include "reference/ops.hpp"
#include "reference/rope.hpp"
#include "verify/bounds/op_bounds.hpp"
#include "verify/oracle/exact_sum.hpp"

using namespace akv;
using namespace akv::test;

namespace {

// K2 as written.
float spec_dot(const float* x, const float* y, int n) {
  float acc[16] = {0};
  int j = 0;
  for (; j + 16 <= n; j += 16)
    for (int l = 0; l < 16; ++l) acc[l] = std::fma(x[j + l], y[j + l], acc[l]);
  for (int w = 8; w >= 1; w /= 2)
    for (int l = 0; l < w; ++l) acc[l] = acc[l] + acc[l + w];
  float r = acc[0];
  for (; j < n; ++j) r = std::fma(x[j], y[j], r);
  return r;
}

// K1 as written: Y (M, d) = X (M, n) W(d, n)^T, one FMA chain per output.
std::vector<float> spec_matmul(const std::vector<float>& X, const std::vector<float>& W, int M, int n, int d) {
  std::vector<float> Y(static_cast<size_t>(M) * d);
  for (int t = 0; t < M; ++t)
    for (int i = 0; i < d; ++i) {
      float acc = 0.0f;
      for (int k = 0; k < n; ++k) acc = std::fma(X[t * n + k], W[static_cast<size_t>(i) * n + k], acc);
      Y[static_cast<size_t>(t) * d + i] = acc;
    }
  return Y;
}

// K4 as written, one head.
void spec_attention(const float* q, const float* k, const float* v, float* out, int pos, int stride, int hd) {
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  float m = -INFINITY, l = 0.0f;
  std::vector<float> acc(hd, 0.0f);
  for (int b0 = 0; b0 <= pos; b0 += 64) {
    const int b1 = std::min(b0 + 64, pos + 1);
    std::vector<float> s;
    for (int p = b0; p < b1; ++p) s.push_back(spec_dot(q, k + static_cast<size_t>(p) * stride, hd) * scale);
    float mb = s[0];
    for (float x : s) mb = mb < x ? x : mb;
    const float m2 = m < mb ? mb : m;
    const float alpha = akv::exp(m - m2);
    for (float& x : s) x = akv::exp(x - m2);
    l = l * alpha;
    for (float e : s) l = l + e;
    for (int i = 0; i < hd; ++i) {
      acc[i] = acc[i] * alpha;
      for (int p = b0; p < b1; ++p) acc[i] = std::fma(s[p - b0], v[static_cast<size_t>(p) * stride + i], acc[i]);
    }
    m = m2;
  }
  for (int i = 0; i < hd; ++i) out[i] = acc[i] / l;
}

class CpuKernels : public VariantTest {
 protected:
  const cpu::Kernels& K() const { return cpu::kernels_for(cpu::parse_isa(GetParam().isa)); }
};

}  // namespace

// ---- K7

using K7_VectorExp = CpuKernels;
TEST_P(K7_VectorExp, BitwiseEqualsScalarOnAStrideOfAllFloatsAndTheEdges) {
  std::vector<float> x, y(4096);
  auto check = [&] {
    y.resize(x.size());
    K().exp(y.data(), x.data(), static_cast<int>(x.size()));
    for (size_t i = 0; i < x.size(); ++i) {
      const float s = akv::exp(x[i]);
      ASSERT_EQ(std::memcmp(&s, &y[i], 4), 0) << "x = " << x[i] << " vector " << y[i] << " scalar " << s;
    }
    x.clear();
  };
  auto push = [&](uint32_t bits) {
    float f;
    std::memcpy(&f, &bits, 4);
    x.push_back(f);
    if (x.size() == 4096) check();
  };
  for (uint64_t u = 0; u < (1ull << 32); u += 127) push(static_cast<uint32_t>(u));
  // Every float within 2^14 ulps of the edges: overflow, underflow, the subnormal and 2^127 scalings.
  for (float e : {88.72283935546875f, -103.972084045410156f, -87.33654f, 88.0f, 0.34657359f, -0.34657359f, 0.0f}) {
    uint32_t b;
    std::memcpy(&b, &e, 4);
    for (int32_t d = -(1 << 14); d <= (1 << 14); ++d) push(b + static_cast<uint32_t>(d));
  }
  for (float s : {INFINITY, -INFINITY, NAN, -NAN, std::numeric_limits<float>::denorm_min(), -0.0f}) x.push_back(s);
  check();
}

// ---- K2, K3

using K2_CanonicalDot = CpuKernels;
TEST_P(K2_CanonicalDot, EqualsTheSpecOrderForEveryLength) {
  for (int n = 0; n <= 80; ++n) {
    const auto x = randu(n, n), y = randu(n, n + 1000, -3, 3);
    const float a = K().dot(x.data(), y.data(), n), b = spec_dot(x.data(), y.data(), n);
    ASSERT_EQ(std::memcmp(&a, &b, 4), 0) << "n = " << n;
  }
  const auto x = randu(768, 5), y = randu(768, 6);
  const float a = K().dot(x.data(), y.data(), 768), b = spec_dot(x.data(), y.data(), 768);
  EXPECT_EQ(std::memcmp(&a, &b, 4), 0);
}

using K3_RMSNorm = CpuKernels;
TEST_P(K3_RMSNorm, EqualsSpecAndIsExactOnIntegers) {
  for (int n : {8, 32, 37, 256, 768}) {
    const auto x = randu(n, n), w = randu(n, n + 1, 0.75f, 1.25f);
    std::vector<float> out(n), spec(n);
    K().rmsnorm(out.data(), x.data(), w.data(), n, 1e-5f);
    const float inv = 1.0f / std::sqrt(spec_dot(x.data(), x.data(), n) / static_cast<float>(n) + 1e-5f);
    for (int j = 0; j < n; ++j) spec[j] = (x[j] * inv) * w[j];
    ASSERT_TRUE(same_bits(out, spec)) << "n = " << n;
    // Integer x: the sum of squares is exact in any order, so the reference's bits follow.
    const auto xi = randi(n, n + 2, 9);
    std::vector<float> ref(n);
    K().rmsnorm(out.data(), xi.data(), w.data(), n, 1e-5f);
    ref::rmsnorm(ref.data(), xi.data(), w.data(), n, 1e-5f);
    ASSERT_TRUE(same_bits(out, ref)) << "n = " << n;
  }
}

// ---- K1

using K1_Matmul = CpuKernels;
TEST_P(K1_Matmul, EqualsOneFmaChainPerOutputWhateverRowsAndPanelSplit) {
  struct Shape {
    int M, n, d;
  };
  for (Shape s : {Shape{1, 32, 16}, Shape{5, 40, 37}, Shape{13, 64, 100}, Shape{7, 3, 290}, Shape{50, 96, 200}}) {
    const auto X = randu(static_cast<size_t>(s.M) * s.n, s.M), W = randu(static_cast<size_t>(s.d) * s.n, s.d);
    const cpu::PackedMatrix P = cpu::pack_rows({&W}, s.n);
    const auto spec = spec_matmul(X, W, s.M, s.n, s.d);
    // All rows at once, panels in one range.
    std::vector<float> Y(spec.size(), NAN);
    K().matmul(X.data(), s.n, s.M, P, 0, P.panels(), Y.data(), s.d);
    ASSERT_TRUE(same_bits(Y, spec)) << s.M << "x" << s.n << "x" << s.d;
    // Row by row (decode), panels split in three ranges (threads).
    std::vector<float> Z(spec.size(), NAN);
    const int a = P.panels() / 3, b = 2 * P.panels() / 3;
    for (int t = 0; t < s.M; ++t)
      for (auto [p0, p1] : {std::pair{0, a}, std::pair{a, b}, std::pair{b, P.panels()}})
        K().matmul(X.data() + t * s.n, s.n, 1, P, p0, p1, Z.data() + static_cast<size_t>(t) * s.d, s.d);
    ASSERT_TRUE(same_bits(Z, spec)) << s.M << "x" << s.n << "x" << s.d;
  }
}

TEST_P(K1_Matmul, SmallIntegersEqualTheReferenceBitwise) {
  const int M = 9, n = 768, d = 70;
  const auto X = randi(static_cast<size_t>(M) * n, 1, 8), W = randi(static_cast<size_t>(d) * n, 2, 8);
  const cpu::PackedMatrix P = cpu::pack_rows({&W}, n);
  std::vector<float> Y(static_cast<size_t>(M) * d), R(Y.size());
  K().matmul(X.data(), n, M, P, 0, P.panels(), Y.data(), d);
  for (int t = 0; t < M; ++t) ref::matmul(R.data() + t * d, X.data() + t * n, W.data(), n, d);
  EXPECT_TRUE(same_bits(Y, R));
  // A planted corner value: an all-zero result cannot pass.
  EXPECT_NE(Y[static_cast<size_t>(M) * d - 1], 0.0f);
}

// ---- K5, K6

TEST_P(K1_Matmul, FusedPanelsOfConcatenatedMatricesEqualSeparateOnes) {
  const int n = 48;
  const auto A = randu(20 * n, 1), B = randu(36 * n, 2), X = randu(3 * n, 3);
  const auto PA = cpu::pack_rows({&A}, n), PB = cpu::pack_rows({&B}, n), PAB = cpu::pack_rows({&A, &B}, n);
  std::vector<float> ya(3 * 20), yb(3 * 36), yab(3 * 56);
  K().matmul(X.data(), n, 3, PA, 0, PA.panels(), ya.data(), 20);
  K().matmul(X.data(), n, 3, PB, 0, PB.panels(), yb.data(), 36);
  K().matmul(X.data(), n, 3, PAB, 0, PAB.panels(), yab.data(), 56);
  for (int t = 0; t < 3; ++t) {
    EXPECT_EQ(std::memcmp(&yab[t * 56], &ya[t * 20], 20 * 4), 0);
    EXPECT_EQ(std::memcmp(&yab[t * 56 + 20], &yb[t * 36], 36 * 4), 0);
  }
}

using K5_RoPE = CpuKernels;
TEST_P(K5_RoPE, BitwiseEqualsTheReference) {
  for (int hd : {8, 32, 64, 70}) {
    const RopeTable t = make_rope_table(hd, 10000.0f, 5000);
    for (int pos : {0, 1, 777, 4999}) {
      auto x = randu(3 * hd, hd + pos, -4, 4), y = x;
      K().rope(x.data(), 3, hd, t.cos_at(pos), t.sin_at(pos));
      ref::rope(y.data(), 3, hd, t.cos_at(pos), t.sin_at(pos));
      ASSERT_TRUE(same_bits(x, y)) << "hd " << hd << " pos " << pos;
    }
  }
}

using K6_Elementwise = CpuKernels;
TEST_P(K6_Elementwise, SwigluAndAddBitwiseEqualTheReference) {
  for (int n : {5, 64, 688, 2048}) {
    auto g = randu(n, n, -120, 120), u = randu(n, n + 1, -3, 3);
    for (int j = 0; j < n; j += 3) g[j] *= 1.0f / 64;  // the ordinary range too
    std::vector<float> a(n), b(n);
    K().swiglu(a.data(), g.data(), u.data(), n);
    ref::swiglu(b.data(), g.data(), u.data(), n);
    ASSERT_TRUE(same_bits(a, b)) << "swiglu n " << n;
    a = g;
    b = g;
    K().add(a.data(), u.data(), n);
    ref::add_inplace(b.data(), u.data(), n);
    ASSERT_TRUE(same_bits(a, b)) << "add n " << n;
  }
}

// ---- K4

using K4_Attention = CpuKernels;
TEST_P(K4_Attention, EqualsTheSpecBlocksAnchoredAtZero) {
  for (int hd : {8, 32, 64}) {
    const int group = 2, kvh = 2, stride = kvh * hd, n = 200;
    auto kc = randu(static_cast<size_t>(n) * stride, hd, -2, 2), vc = randu(kc.size(), hd + 1);
    for (int pos : {0, 1, 62, 63, 64, 65, 127, 128, 150}) {
      // Rows after pos are garbage: a read of them would show.
      auto K2 = kc, V2 = vc;
      std::fill(K2.begin() + static_cast<ptrdiff_t>(pos + 1) * stride, K2.end(), NAN);
      std::fill(V2.begin() + static_cast<ptrdiff_t>(pos + 1) * stride, V2.end(), NAN);
      const auto q = randu(static_cast<size_t>(group) * hd, pos, -2, 2);
      for (int g = 0; g < kvh; ++g) {
        std::vector<float> out(static_cast<size_t>(group) * hd, NAN), spec(out.size());
        cpu::AttnArgs a{q.data(), K2.data() + g * hd, V2.data() + g * hd, out.data(), pos, stride, hd, group,
                        1.0f / std::sqrt(static_cast<float>(hd))};
        K().attention(a);
        for (int h = 0; h < group; ++h)
          spec_attention(q.data() + h * hd, K2.data() + g * hd, V2.data() + g * hd, spec.data() + h * hd, pos, stride, hd);
        ASSERT_TRUE(same_bits(out, spec)) << "hd " << hd << " pos " << pos << " kv head " << g;
      }
    }
  }
}

TEST_P(K4_Attention, RowsOfAnItemEqualEachTokenAlone) {
  // An item of `rows` consecutive tokens shares the passes over the cache; each token's bits must
  // be those of the token alone (rows = 1), i.e. the clause's, across block edges and every split.
  for (int hd : {8, 64}) {
    for (int group : {1, 3, 40, 100}) {
      const int kvh = 2, stride = kvh * hd, n = 160, qs = group * hd + 5, os = group * hd + 3;
      const auto kc = randu(static_cast<size_t>(n) * stride, hd + group, -2, 2), vc = randu(kc.size(), hd + 7);
      const auto q = randu(static_cast<size_t>(n) * qs, group, -2, 2);
      for (auto [pos, rows] : {std::pair{0, 1}, {0, 8}, {5, 3}, {57, 8}, {60, 9}, {63, 2}, {100, 11}, {120, 40}}) {
        auto K2 = kc, V2 = vc;  // rows after the last token's position are garbage
        std::fill(K2.begin() + static_cast<ptrdiff_t>(pos + rows) * stride, K2.end(), NAN);
        std::fill(V2.begin() + static_cast<ptrdiff_t>(pos + rows) * stride, V2.end(), NAN);
        std::vector<float> out(static_cast<size_t>(rows) * os, -1.0f), alone(out.size(), -1.0f);
        const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
        cpu::AttnArgs a{q.data(), K2.data() + hd, V2.data() + hd, out.data(), pos, stride, hd, group, scale};
        a.rows = rows;
        a.q_stride = static_cast<size_t>(qs);
        a.out_stride = static_cast<size_t>(os);
        K().attention(a);
        for (int t = 0; t < rows; ++t) {
          cpu::AttnArgs b{q.data() + static_cast<size_t>(t) * qs, K2.data() + hd, V2.data() + hd,
                          alone.data() + static_cast<size_t>(t) * os, pos + t, stride, hd, group, scale};
          K().attention(b);
          if (group <= 3)
            for (int h = 0; h < group; ++h) {
              std::vector<float> spec(hd);
              spec_attention(q.data() + static_cast<size_t>(t) * qs + h * hd, K2.data() + hd, V2.data() + hd,
                             spec.data(), pos + t, stride, hd);
              ASSERT_EQ(std::memcmp(spec.data(), alone.data() + static_cast<size_t>(t) * os + h * hd, hd * 4), 0)
                  << "hd " << hd << " pos " << pos + t << " head " << h;
            }
        }
        ASSERT_TRUE(same_bits(out, alone)) << "hd " << hd << " group " << group << " pos " << pos << " rows " << rows;
      }
    }
  }
}

TEST_P(K4_Attention, HardAttentionEqualsTheReferenceBitwise) {
  // Integer scores 1024*scale apart: every weight but the winner's is exp(< -104) = 0 exactly,
  // in the reference and here, so both return the winning value row bit for bit.
  for (int hd : {8, 64}) {
    const int n = 300, stride = hd;
    std::vector<float> k(static_cast<size_t>(n) * hd, 0.0f), q(hd, 0.0f);
    const auto v = randu(static_cast<size_t>(n) * hd, 9, -5, 5);
    q[1] = 1024.0f;
    for (int pos : {0, 5, 63, 64, 130, 299}) {
      const int winner = (pos * 7) % (pos + 1);
      for (int p = 0; p <= pos; ++p) k[static_cast<size_t>(p) * hd + 1] = (p == winner) ? 1.0f : -1.0f;
      std::vector<float> out(hd), ref(hd), att(n);
      cpu::AttnArgs a{q.data(), k.data(), v.data(), out.data(), pos, stride, hd, 1,
                      1.0f / std::sqrt(static_cast<float>(hd))};
      K().attention(a);
      ref::attention_head(ref.data(), q.data(), k.data(), v.data(), pos + 1, stride, hd, att.data());
      ASSERT_TRUE(same_bits(out, ref)) << "hd " << hd << " pos " << pos;
      ASSERT_EQ(std::memcmp(out.data(), v.data() + static_cast<size_t>(winner) * hd, hd * 4), 0);
    }
  }
}

// ---- K12: within the proven bounds of the reference (B10: |cpu - ref| <= B_ref + B_cpu)

namespace {
// "K12_WithinBounds/<op>/<isa>": the RapidCheck id of a K12 property on one ISA.
std::string k12_id(const std::string& op, const std::string& isa) { return "K12_WithinBounds/" + op + "/" + isa; }
}  // namespace

using K12_WithinBounds = CpuKernels;

TEST_P(K12_WithinBounds, MatmulRowsAndDotsWithinTwiceB1) {
  // K1 (one FMA chain per output) and K2 (16 lanes, tree, tail) against the reference's
  // left-to-right sum: every output within 2 B1 of the reference, and within B1 of the exact
  // value (GMP) for the first output of each case.
  Closeness mm, dt;
  check_property(k12_id("Matmul", GetParam().isa), [&] {
    const Fam f = *gen_fam();
    const int n = *gen_length(), d = *rc::gen::inRange(1, 41), M = *rc::gen::inRange(1, 4);
    const uint64_t seed = *rc::gen::inRange<uint64_t>(0, 1u << 30);
    const auto X = fam_values(f, static_cast<size_t>(M) * n, seed), W = fam_values(f, static_cast<size_t>(d) * n, seed + 1);
    const auto P = cpu::pack_rows({&W}, n);
    std::vector<float> Y(static_cast<size_t>(M) * d), R(Y.size());
    K().matmul(X.data(), n, M, P, 0, P.panels(), Y.data(), d);
    for (int t = 0; t < M; ++t) ref::matmul(R.data() + t * d, X.data() + t * n, W.data(), n, d);
    for (int t = 0; t < M; ++t)
      for (int i = 0; i < d; ++i) {
        const size_t o = static_cast<size_t>(t) * d + i;
        const double b = bounds::dot_bound(W.data() + static_cast<size_t>(i) * n, 1, X.data() + static_cast<size_t>(t) * n, 1, n);
        RC_ASSERT(std::isfinite(b));
        RC_ASSERT(mm.add(Y[o], R[o], 2 * b));
      }
    RC_ASSERT(oracle::dot_abs_err_up(Y[0], X.data(), 1, W.data(), 1, n) <= bounds::dot_bound(X.data(), 1, W.data(), 1, n));
    // The canonical dot of K2 (RMSNorm's and the scores' reduction).
    const float a = K().dot(X.data(), W.data(), n);
    RC_ASSERT(oracle::dot_abs_err_up(a, X.data(), 1, W.data(), 1, n) <= bounds::dot_bound(X.data(), 1, W.data(), 1, n));
    RC_ASSERT(dt.add(a, R[0], 2 * bounds::dot_bound(X.data(), 1, W.data(), 1, n)));
  });
  mm.print(GetParam().isa + " K12 matmul rows (B1)");
  dt.print(GetParam().isa + " K12 canonical dot (B1)");
  EXPECT_GT(mm.nonzero, 0) << "random inputs should show the fused order";
}

TEST_P(K12_WithinBounds, RMSNormWithinTwiceB2) {
  Closeness c;
  check_property(k12_id("RMSNorm", GetParam().isa), [&] {
    const Fam f = *gen_fam();
    const int n = *gen_length();
    const float eps = *rc::gen::element(1e-5f, 1e-6f);
    const uint64_t seed = *rc::gen::inRange<uint64_t>(0, 1u << 30);
    const auto x = fam_values(f, n, seed), w = fam_values(Fam::kPlain, n, seed + 1);
    std::vector<float> a(n), b(n);
    K().rmsnorm(a.data(), x.data(), w.data(), n, eps);
    ref::rmsnorm(b.data(), x.data(), w.data(), n, eps);
    const auto B = bounds::rmsnorm_bounds(x, w, eps);
    for (int j = 0; j < n; ++j) {
      RC_ASSERT(std::isfinite(B[j]));
      RC_ASSERT(c.add(a[j], b[j], 2 * B[j]));
    }
  });
  c.print(GetParam().isa + " K12 RMSNorm (B2)");
  EXPECT_GT(c.nonzero, 0);
}

TEST_P(K12_WithinBounds, RopeAndSwigluAreBitwiseTheReference) {
  // B3 and B8 hold trivially: K5 and K6 are the reference's operations, bit for bit, on
  // every family (the gate scaled to +-100, where exp(-g) overflows).
  static const RopeTable t = make_rope_table(64, 10000.0f, 4096);
  check_property(k12_id("RopeSwiglu", GetParam().isa), [&] {
    const Fam f = *gen_fam();
    const uint64_t seed = *rc::gen::inRange<uint64_t>(0, 1u << 30);
    const int pos = *rc::gen::inRange(0, 4096);
    auto x = fam_values(f, 3 * 64, seed), y = x;
    K().rope(x.data(), 3, 64, t.cos_at(pos), t.sin_at(pos));
    ref::rope(y.data(), 3, 64, t.cos_at(pos), t.sin_at(pos));
    RC_ASSERT(check::same_bits(x, y));
    const int n = *rc::gen::inRange(1, 700);
    const float gs = *rc::gen::element(1.0f, 20.0f, 100.0f);
    const auto g = fam_values(f, n, seed + 1, gs), u = fam_values(Fam::kPlain, n, seed + 2);
    std::vector<float> a(n), b(n);
    K().swiglu(a.data(), g.data(), u.data(), n);
    ref::swiglu(b.data(), g.data(), u.data(), n);
    RC_ASSERT(check::same_bits(a, b));
  });
}

TEST_P(K12_WithinBounds, ScoresWithinTwiceB4) {
  // K4 step 1: dot(q, k) (K2) times scale, against the reference's left-to-right dot times
  // the same scale.
  Closeness c;
  check_property(k12_id("Scores", GetParam().isa), [&] {
    const Fam f = *gen_fam();
    const int d = *rc::gen::element(8, 16, 32, 64, 128, 2048);
    const uint64_t seed = *rc::gen::inRange<uint64_t>(0, 1u << 30);
    const auto q = fam_values(f, d, seed), k = fam_values(f, d, seed + 1);
    const float scale = 1.0f / std::sqrt(static_cast<float>(d));
    const float opt = K().dot(q.data(), k.data(), d) * scale;
    float dot = 0;
    for (int i = 0; i < d; ++i) dot = dot + q[i] * k[i];
    const double b = bounds::score_bound(q, k);
    RC_ASSERT(std::isfinite(b));
    RC_ASSERT(c.add(opt, dot * scale, 2 * b));
  });
  c.print(GetParam().isa + " K12 scores (B4)");
}

TEST_P(K12_WithinBounds, AttentionHeadWithinB14ReferencePlusOnline) {
  // The fused online-softmax kernel (K4) against the reference's three passes (M9): every
  // output element within B14(reference) + B14(online) (spec/bounds.md B14), n up to 4096 keys.
  Closeness c;
  check_property(k12_id("Attention", GetParam().isa), [&] {
    const AttnInput a = gen_attn_input();
    std::vector<float> opt(a.d), ref(a.d), att(a.n);
    cpu::AttnArgs args{a.q.data(), a.k.data(), a.v.data(), opt.data(), a.n - 1, a.d, a.d, 1,
                       1.0f / std::sqrt(static_cast<float>(a.d))};
    K().attention(args);
    ref::attention_head(ref.data(), a.q.data(), a.k.data(), a.v.data(), a.n, a.d, a.d, att.data());
    const auto br = bounds::attention_bounds(a.q.data(), a.k.data(), a.v.data(), a.n, a.d, a.d,
                                             bounds::attn_rounding_reference(a.n));
    const auto bo = bounds::attention_bounds(a.q.data(), a.k.data(), a.v.data(), a.n, a.d, a.d,
                                             bounds::attn_rounding_online(a.n, cpu::kKeyBlock));
    for (int i = 0; i < a.d; ++i) {
      RC_ASSERT(std::isfinite(br[i]) && std::isfinite(bo[i]));
      RC_ASSERT(c.add(opt[i], ref[i], br[i] + bo[i]));
    }
  });
  c.print(GetParam().isa + " K12 attention head (B14)");
  EXPECT_GT(c.nonzero, 0);
}

TEST_P(K12_WithinBounds, LogitsWithinTwiceB9) {
  // Final RMSNorm (K3) then the output matmul (K1) against the reference's: within 2 B9.
  Closeness c;
  check_property(k12_id("Logits", GetParam().isa), [&] {
    const Fam f = *gen_fam();
    const int n = *gen_length(), vocab = *rc::gen::inRange(1, 65);
    const uint64_t seed = *rc::gen::inRange<uint64_t>(0, 1u << 30);
    const auto x = fam_values(f, n, seed), wn = fam_values(Fam::kPlain, n, seed + 1),
               W = fam_values(Fam::kPlain, static_cast<size_t>(vocab) * n, seed + 2);
    const auto P = cpu::pack_rows({&W}, n);
    std::vector<float> y(n), L(vocab), yr(n), Lr(vocab);
    K().rmsnorm(y.data(), x.data(), wn.data(), n, 1e-5f);
    K().matmul(y.data(), n, 1, P, 0, P.panels(), L.data(), vocab);
    ref::rmsnorm(yr.data(), x.data(), wn.data(), n, 1e-5f);
    ref::matmul(Lr.data(), yr.data(), W.data(), n, vocab);
    const auto B = bounds::logits_bounds(x, wn, 1e-5f, W, vocab);
    for (int i = 0; i < vocab; ++i) {
      RC_ASSERT(std::isfinite(B[i]));
      RC_ASSERT(c.add(L[i], Lr[i], 2 * B[i]));
    }
  });
  c.print(GetParam().isa + " K12 logits (B9)");
}

INSTANTIATE_TEST_SUITE_P(, K7_VectorExp, ::testing::ValuesIn(cpu_isa_variants()), variant_name);
INSTANTIATE_TEST_SUITE_P(, K2_CanonicalDot, ::testing::ValuesIn(cpu_isa_variants()), variant_name);
INSTANTIATE_TEST_SUITE_P(, K3_RMSNorm, ::testing::ValuesIn(cpu_isa_variants()), variant_name);
INSTANTIATE_TEST_SUITE_P(, K1_Matmul, ::testing::ValuesIn(cpu_isa_variants()), variant_name);
INSTANTIATE_TEST_SUITE_P(, K5_RoPE, ::testing::ValuesIn(cpu_isa_variants()), variant_name);
INSTANTIATE_TEST_SUITE_P(, K6_Elementwise, ::testing::ValuesIn(cpu_isa_variants()), variant_name);
INSTANTIATE_TEST_SUITE_P(, K4_Attention, ::testing::ValuesIn(cpu_isa_variants()), variant_name);
INSTANTIATE_TEST_SUITE_P(, K12_WithinBounds, ::testing::ValuesIn(cpu_isa_variants()), variant_name);
