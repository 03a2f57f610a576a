// spec/arithmetic.md A4: include/akv/exp.h, the exp a kernel library may call (compiled as C,
// tests/exp_header_c.c), gives akv::exp's bits: on a stride of all floats and every float near
// the edges (overflow, underflow, the subnormal and 2^127 scalings).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "reference/exp.hpp"

extern "C" void akv_test_exp_header_c(float* out, const float* x, int n);

namespace {

// The floats of the comparison: every 61st bit pattern, the edges' neighbourhoods, specials.
std::vector<float> inputs() {
  std::vector<float> x;
  auto push = [&](uint32_t bits) {
    float f;
    std::memcpy(&f, &bits, 4);
    x.push_back(f);
  };
  for (uint64_t u = 0; u < (1ull << 32); u += 61) push(static_cast<uint32_t>(u));
  for (float e : {88.72283935546875f, -103.972084045410156f, -87.33654f, 88.0f, 0.34657359f, -0.34657359f, 0.0f}) {
    uint32_t b;
    std::memcpy(&b, &e, 4);
    for (int32_t d = -(1 << 14); d <= (1 << 14); ++d) push(b + static_cast<uint32_t>(d));
  }
  for (float s : {INFINITY, -INFINITY, NAN, -NAN, std::numeric_limits<float>::denorm_min(), -0.0f}) x.push_back(s);
  return x;
}

}  // namespace

TEST(A4_ExpHeader, BitIdenticalToAkvExpOnAStrideOfAllFloatsAndTheEdges) {
  const std::vector<float> x = inputs();
  std::vector<float> y(x.size());
  akv_test_exp_header_c(y.data(), x.data(), static_cast<int>(x.size()));
  size_t differs_from_expf = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const float s = akv::exp(x[i]);
    ASSERT_EQ(std::memcmp(&s, &y[i], 4), 0) << "x = " << x[i] << ": akv_exp " << y[i] << ", akv::exp " << s;
    const float e = std::exp(x[i]);
    differs_from_expf += std::isfinite(s) && std::memcmp(&s, &e, 4) != 0;
  }
  // The comparison can fail: the C library's expf is not akv's exp (A4 is its own function).
  EXPECT_GT(differs_from_expf, 0u);
}
