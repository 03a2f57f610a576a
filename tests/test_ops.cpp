// Hand-checked cases of the reference ops (spec/model.md M6-M10, spec/arithmetic.md A4).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "reference/exp.hpp"
#include "reference/ops.hpp"
#include "reference/rope.hpp"

using namespace akv;

TEST(M7_RMSNorm, ExactCases) {
  // mean(x^2) = 4 -> 1/sqrt(4) = 0.5, every step exact in binary32.
  const float x[4] = {4, 0, 0, 0}, w[4] = {0.5f, 1, 1, 1};
  float out[4];
  ref::rmsnorm(out, x, w, 4, 0.0f);
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[1], 0.0f);
  const float y[4] = {-2, 2, -2, 2}, ones[4] = {1, 1, 1, 1};
  ref::rmsnorm(out, y, ones, 4, 0.0f);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(out[i], y[i] / 2);
}

TEST(M7_RMSNorm, EpsilonKeepsZeroFinite) {
  const float x[4] = {0, 0, 0, 0}, w[4] = {1, 1, 1, 1};
  float out[4];
  ref::rmsnorm(out, x, w, 4, 1e-5f);
  for (float v : out) EXPECT_EQ(v, 0.0f);
}

TEST(M8_Matmul, SmallIntegersAreExact) {
  // W (2,3) @ x (3,): integer products and sums are exact in any order.
  const float W[6] = {1, 2, 3, -4, 5, -6}, x[3] = {7, -8, 9};
  float out[2];
  ref::matmul(out, x, W, 3, 2);
  EXPECT_EQ(out[0], 1 * 7 + 2 * -8 + 3 * 9);
  EXPECT_EQ(out[1], -4 * 7 + 5 * -8 + -6 * 9);
}

TEST(M6_RoPE, PositionZeroIsIdentity) {
  const RopeTable t = make_rope_table(8, 10000.0f, 4);
  float x[16], y[16];
  for (int i = 0; i < 16; ++i) x[i] = y[i] = static_cast<float>(i) * 0.37f - 2.0f;
  ref::rope(y, 2, 8, t.cos_at(0), t.sin_at(0));
  EXPECT_EQ(std::memcmp(x, y, sizeof x), 0);
}

TEST(M6_RoPE, PositionOneRotatesPairsByTheirFrequency) {
  const RopeTable t = make_rope_table(8, 10000.0f, 4);
  // Pair i is (x[i], x[i+4]) and turns by theta^(-2i/8) radians at position 1.
  for (int i = 0; i < 4; ++i) {
    const double ang = std::pow(10000.0, -2.0 * i / 8);
    EXPECT_EQ(t.cos_at(1)[i], static_cast<float>(std::cos(ang)));
    EXPECT_EQ(t.sin_at(1)[i], static_cast<float>(std::sin(ang)));
    float e[8] = {0};
    e[i] = 1.0f;
    ref::rope(e, 1, 8, t.cos_at(1), t.sin_at(1));
    EXPECT_EQ(e[i], t.cos_at(1)[i]);
    EXPECT_EQ(e[i + 4], t.sin_at(1)[i]);
    for (int j = 0; j < 8; ++j)
      if (j != i && j != i + 4) {
        EXPECT_EQ(e[j], 0.0f);
      }
  }
}

TEST(M6_RoPE, LargePositionFollowsTheOneTableFormula) {
  const int max_pos = 16384;
  const RopeTable t = make_rope_table(32, 10000.0f, max_pos);
  for (int p : {1000, 8191, 16383}) {
    for (int i = 0; i < 16; ++i) {
      const double a = static_cast<double>(p) * std::pow(10000.0, -2.0 * i / 32);
      EXPECT_EQ(t.cos_at(p)[i], static_cast<float>(std::cos(a))) << "pos " << p << " i " << i;
      EXPECT_EQ(t.sin_at(p)[i], static_cast<float>(std::sin(a))) << "pos " << p << " i " << i;
    }
  }
  // A rotation by pi/2 multiples is not special-cased: (1, 0) turns onto the table's point.
  float v[32] = {0};
  v[0] = 1.0f;
  ref::rope(v, 1, 32, t.cos_at(16383), t.sin_at(16383));
  EXPECT_EQ(v[0], t.cos_at(16383)[0]);
  EXPECT_EQ(v[16], t.sin_at(16383)[0]);
}

TEST(M9_Softmax, HandChecked) {
  float a[2] = {0, 0};
  ref::softmax(a, 2);
  EXPECT_EQ(a[0], 0.5f);
  EXPECT_EQ(a[1], 0.5f);
  float b[4] = {1000, 1000, 1000, 1000};  // max-subtraction: no overflow
  ref::softmax(b, 4);
  for (float v : b) EXPECT_EQ(v, 0.25f);
  float c[2] = {0, -std::numeric_limits<float>::infinity()};
  ref::softmax(c, 2);
  EXPECT_EQ(c[0], 1.0f);
  EXPECT_EQ(c[1], 0.0f);
  float d[1] = {-3.5f};
  ref::softmax(d, 1);
  EXPECT_EQ(d[0], 1.0f);
}

TEST(M9_Softmax, ShiftInvariantBitwise) {
  // Subtracting the max first makes softmax(x + c) == softmax(x) when x + c is exact.
  float a[5] = {0, -1, -2.5f, -0.25f, -7}, b[5];
  for (int i = 0; i < 5; ++i) b[i] = a[i] + 64.0f;
  ref::softmax(a, 5);
  ref::softmax(b, 5);
  EXPECT_EQ(std::memcmp(a, b, sizeof a), 0);
}

TEST(M10_SwiGLU, HandChecked) {
  EXPECT_EQ(ref::silu(0.0f), 0.0f);
  // silu(a) = a / (1 + exp(-a)); exp(-inf side) -> 0, so large a passes through.
  EXPECT_EQ(ref::silu(200.0f), 200.0f);
  EXPECT_EQ(ref::silu(-200.0f), -0.0f);
  const float g[2] = {0, 200}, u[2] = {3, 0.5f};
  float out[2];
  ref::swiglu(out, g, u, 2);
  EXPECT_EQ(out[0], 0.0f);
  EXPECT_EQ(out[1], 100.0f);
}

TEST(A4_Exp, SpecialValues) {
  EXPECT_EQ(akv::exp(0.0f), 1.0f);
  EXPECT_EQ(akv::exp(-0.0f), 1.0f);
  EXPECT_EQ(akv::exp(-std::numeric_limits<float>::infinity()), 0.0f);
  EXPECT_EQ(akv::exp(std::numeric_limits<float>::infinity()), std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(akv::exp(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_EQ(akv::exp(-104.0f), 0.0f);
  EXPECT_EQ(akv::exp(89.0f), std::numeric_limits<float>::infinity());
  EXPECT_GT(akv::exp(-103.0f), 0.0f);  // subnormal results are kept, not flushed
  EXPECT_LT(akv::exp(-103.0f), std::numeric_limits<float>::min());
  EXPECT_TRUE(std::isfinite(akv::exp(88.72f)));
}

TEST(A4_Exp, MonotoneOnAGrid) {
  float prev = 0.0f;
  for (float x = -103.9f; x < 88.7f; x += 0.0137f) {
    const float y = akv::exp(x);
    ASSERT_GE(y, prev) << "x = " << x;
    prev = y;
  }
}
