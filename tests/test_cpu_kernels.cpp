// The CPU kernels against the orders of spec/kernels-cpu.md (K1-K4, K7), on every ISA the
// machine has. Each spec_* below is the clause's text written as plain scalar code, apart from
// the kernels; equality is memcmp. The checks every backend shares (the reference's bits on
// exact inputs, K5, K6, and K12: every op within the proven bounds of the reference) are
// written once in verify/check/op_props and op_checks and run per ISA by test_op_checks.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "cpu_support.hpp"
#include "optimized/cpu/kernels.hpp"
#include "reference/exp.hpp"

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
      // K1: one FMA chain per block of 64 k, the block sums added in block order.
      float total = 0.0f;
      for (int k0 = 0; k0 < n; k0 += 64) {
        float acc = 0.0f;
        for (int k = k0; k < std::min(n, k0 + 64); ++k) acc = std::fma(X[t * n + k], W[static_cast<size_t>(i) * n + k], acc);
        total = k0 == 0 ? acc : total + acc;
      }
      Y[static_cast<size_t>(t) * d + i] = total;
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
    float lb = 0.0f;
    for (float e : s) lb = lb + e;
    l = std::fma(l, alpha, lb);
    for (int i = 0; i < hd; ++i) {
      float ab = 0.0f;
      for (int p = b0; p < b1; ++p) ab = std::fma(s[p - b0], v[static_cast<size_t>(p) * stride + i], ab);
      acc[i] = std::fma(acc[i], alpha, ab);
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
TEST_P(K3_RMSNorm, EqualsTheSpecOrder) {
  for (int n : {8, 32, 37, 256, 768}) {
    const auto x = randu(n, n), w = randu(n, n + 1, 0.75f, 1.25f);
    std::vector<float> out(n), spec(n);
    K().rmsnorm(out.data(), x.data(), w.data(), n, 1e-5f);
    const float inv = 1.0f / std::sqrt(spec_dot(x.data(), x.data(), n) / static_cast<float>(n) + 1e-5f);
    for (int j = 0; j < n; ++j) spec[j] = (x[j] * inv) * w[j];
    ASSERT_TRUE(same_bits(out, spec)) << "n = " << n;
  }
}

// ---- K1

using K1_Matmul = CpuKernels;
TEST_P(K1_Matmul, EqualsBlockedFmaChainsPerOutputWhateverRowsAndPanelSplit) {
  struct Shape {
    int M, n, d;
  };
  for (Shape s : {Shape{1, 32, 16}, Shape{5, 40, 37}, Shape{13, 64, 100}, Shape{7, 3, 290}, Shape{50, 96, 200},
                  Shape{3, 65, 20}, Shape{11, 200, 50}, Shape{4, 576, 33}}) {
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

// ---- K4

using K4_Attention = CpuKernels;
TEST_P(K4_Attention, EqualsTheSpecBlocksAnchoredAtZero) {
  for (int hd : cpu::kAttentionCheckHeadDims) {  // every path K4 dispatches on (kernels.hpp), 128 included
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
  for (int hd : cpu::kAttentionCheckHeadDims) {
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
          // every head of small groups; the first and last of large ones (the lane path)
          for (int h = 0; h < group; h += group <= 3 ? 1 : group - 1) {
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

TEST_P(K4_Attention, SplitOverKeyBlocksEqualsTheItemWhateverTheRanges) {
  // The decode split (kernels.hpp attention_split_*): phases run over key-block ranges in any
  // grouping and order must give attention()'s bits, and the clause's. Scratch starts as NaN.
  for (int hd : cpu::kAttentionPathHeadDims)
    for (int group = 1; group <= 6; ++group) {
      const int kvh = 2, stride = kvh * hd, n = 300;
      const auto kc = randu(static_cast<size_t>(n) * stride, hd + group, -3, 3), vc = randu(kc.size(), hd + 11);
      const auto q = randu(static_cast<size_t>(group) * hd, group + 5, -3, 3);
      for (int pos : {0, 63, 64, 65, 127, 128, 191, 250, 299}) {
        auto K2 = kc, V2 = vc;  // rows after pos are garbage
        std::fill(K2.begin() + static_cast<ptrdiff_t>(pos + 1) * stride, K2.end(), NAN);
        std::fill(V2.begin() + static_cast<ptrdiff_t>(pos + 1) * stride, V2.end(), NAN);
        const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
        std::vector<float> whole(static_cast<size_t>(group) * hd, NAN);
        cpu::AttnArgs a{q.data(), K2.data() + hd, V2.data() + hd, whole.data(), pos, stride, hd, group, scale};
        ASSERT_TRUE(cpu::split_attention_applies(a));
        K().attention(a);
        const int nbk = (pos + 64) / 64;
        for (int cb : {1, 2, 3}) {
          std::vector<float> s(static_cast<size_t>(group) * nbk * 64, NAN), mb(static_cast<size_t>(group) * nbk, NAN),
              lb(mb.size(), NAN), acc(mb.size() * hd, NAN), out(whole.size(), NAN);
          a.out = out.data();
          // the ranges last to first: no phase may lean on an earlier range having run
          for (int b0 = (nbk - 1) / cb * cb; b0 >= 0; b0 -= cb) K().attention_split_scores(a, b0, std::min(nbk, b0 + cb), s.data(), mb.data());
          std::vector<float> mr(mb.size(), NAN);
          cpu::split_running_maxes(mb.data(), group, nbk, mr.data());
          for (int b0 = (nbk - 1) / cb * cb; b0 >= 0; b0 -= cb)
            K().attention_split_values(a, b0, std::min(nbk, b0 + cb), s.data(), mr.data(), lb.data(), acc.data());
          K().attention_split_fold(a, mr.data(), lb.data(), acc.data());
          ASSERT_TRUE(same_bits(out, whole)) << "hd " << hd << " group " << group << " pos " << pos << " ranges " << cb;
        }
        std::vector<float> spec(hd);
        spec_attention(q.data() + static_cast<size_t>(group - 1) * hd, K2.data() + hd, V2.data() + hd, spec.data(), pos, stride, hd);
        ASSERT_EQ(std::memcmp(spec.data(), whole.data() + static_cast<size_t>(group - 1) * hd, hd * 4), 0) << "hd " << hd << " pos " << pos;
      }
    }
}

INSTANTIATE_TEST_SUITE_P(, K7_VectorExp, ::testing::ValuesIn(cpu_isa_variants()), variant_name);
INSTANTIATE_TEST_SUITE_P(, K2_CanonicalDot, ::testing::ValuesIn(cpu_isa_variants()), variant_name);
INSTANTIATE_TEST_SUITE_P(, K3_RMSNorm, ::testing::ValuesIn(cpu_isa_variants()), variant_name);
INSTANTIATE_TEST_SUITE_P(, K1_Matmul, ::testing::ValuesIn(cpu_isa_variants()), variant_name);
INSTANTIATE_TEST_SUITE_P(, K4_Attention, ::testing::ValuesIn(cpu_isa_variants()), variant_name);
