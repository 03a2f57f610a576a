// The arithmetic contract (spec/arithmetic.md A1-A3).
#include <gtest/gtest.h>

#include <cmath>
#include <xmmintrin.h>

#include "reference/ops.hpp"
#include "reference/scalar.hpp"

using namespace akv;

TEST(A1_Arithmetic, NoContractionInTheOps) {
  // Row (c, a) · (1, b): left to right, acc = c, then acc + a*b. a*b = 1 + 2^-11 + 2^-24
  // rounds to 1 + 2^-11 (tie to even), so the separately rounded sum is exactly 0; a fused
  // fma(a, b, c) would give 2^-24.
  const float a = 1.0f + 0x1p-12f, b = 1.0f + 0x1p-12f, c = -(1.0f + 0x1p-11f);
  const float W[2] = {c, a}, x[2] = {1.0f, b};
  float out;
  ref::matmul(&out, x, W, 2, 1);
  EXPECT_EQ(out, 0.0f);
  EXPECT_EQ(std::fma(a, b, c), 0x1p-24f);  // the fused result really differs
}

TEST(A1_Arithmetic, DenormalsAreKept) {
  // Neither flush-to-zero nor denormals-are-zero is set in MXCSR, and subnormals survive.
  const unsigned mxcsr = _mm_getcsr();
  EXPECT_EQ(mxcsr & 0x8000u, 0u) << "FTZ set";
  EXPECT_EQ(mxcsr & 0x0040u, 0u) << "DAZ set";
  volatile float tiny = 0x1p-140f;
  EXPECT_EQ(tiny * 2.0f, 0x1p-139f);
  const float W[1] = {0x1p-70f}, x[1] = {0x1p-70f};
  float out;
  ref::matmul(&out, x, W, 1, 1);
  EXPECT_EQ(out, 0x1p-140f);
}

TEST(A2_ReductionOrder, LeftToRightFromZero) {
  // (1e8 + 1) - 1e8 = 0 in binary32, left to right; any other order gives 1.
  const float W[3] = {1e8f, 1.0f, -1e8f}, x[3] = {1, 1, 1};
  float out;
  ref::matmul(&out, x, W, 3, 1);
  EXPECT_EQ(out, 0.0f);
  const float W2[3] = {1e8f, -1e8f, 1.0f};
  ref::matmul(&out, x, W2, 3, 1);
  EXPECT_EQ(out, 1.0f);
  // The same order in RMSNorm's sum of squares: 4096^2 + 1 + ... rounds the same way.
  float y[3] = {4096.0f, 1.0f, 0.0f}, w[3] = {1, 1, 1}, o[3];
  ref::rmsnorm(o, y, w, 3, 0.0f);
  EXPECT_EQ(o[0], 4096.0f * (1.0f / std::sqrt((4096.0f * 4096.0f + 1.0f) / 3.0f)));
}

TEST(A3_ScalarOps, SqrtAndDivisionAreCorrectlyRounded) {
  // For binary32, sqrt and division through double then one rounding to float are correctly
  // rounded (53 >= 2*24 + 2, Figueroa 1995), so they are the exact reference here.
  uint32_t bits = 0x3f800001u;
  for (int i = 0; i < 100000; ++i) {
    float x;
    bits = bits * 1664525u + 1013904223u;
    uint32_t b = (bits & 0x7fffffffu) % 0x7f000000u;
    std::memcpy(&x, &b, sizeof x);
    ASSERT_EQ(ScalarOps<float>::sqrt(x), static_cast<float>(std::sqrt(static_cast<double>(x)))) << x;
    const float y = 1.0f + static_cast<float>(i) * 0.001f;
    ASSERT_EQ(x / y, static_cast<float>(static_cast<double>(x) / static_cast<double>(y))) << x << " / " << y;
  }
  EXPECT_EQ(ScalarOps<float>::max(-0.5f, 2.0f), 2.0f);
  EXPECT_EQ(ScalarOps<float>::exp(1.5f), akv::exp(1.5f));
}
