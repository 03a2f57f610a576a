// Dequantization to float32, bit-exact (spec/gguf.md Q1-Q5): every binary16 and bfloat16
// pattern against digests of numpy's conversion, and hand-built blocks of each type checked
// against an independent computation in double (exact here, see Q3-Q5).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>

#include "tests/support/gguf_builder.hpp"
#include "readers/gguf/dequant.hpp"
#include "reference/error.hpp"
#include "reference/prng.hpp"
#include "verify/digest.hpp"

using namespace akv;
using namespace akv::model;

namespace {

uint32_t bits(float f) { return std::bit_cast<uint32_t>(f); }

std::vector<float> run(uint32_t type, const std::vector<uint8_t>& in, size_t n) {
  std::vector<float> out(n, std::nanf(""));
  dequantize(type, in, out, "test");
  return out;
}

// A random fp16 scale: finite, sign and exponent anywhere (subnormals included).
uint16_t random_half(SplitMix64& r) {
  for (;;) {
    const auto h = static_cast<uint16_t>(r.next());
    if (((h >> 10) & 0x1F) != 0x1F) return h;
  }
}

}  // namespace

TEST(Q1_HalfAndBf16, EveryHalfMatchesNumpy) {
  std::vector<float> all(65536);
  for (uint32_t h = 0; h < 65536; ++h) all[h] = half_to_float(static_cast<uint16_t>(h));
  // numpy 2.4: np.arange(65536, dtype=np.uint16).view(np.float16).astype(np.float32), SHA-256.
  EXPECT_EQ(sha256_floats(all), "f4fdd084f85448d28c84f20fabf4022ba938e40b7f382d2727dec6f41ac6267a");
  EXPECT_EQ(half_to_float(0x3C00), 1.0f);
  EXPECT_EQ(half_to_float(0xC000), -2.0f);
  EXPECT_EQ(half_to_float(0x7BFF), 65504.0f);
  EXPECT_EQ(half_to_float(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal
  EXPECT_EQ(half_to_float(0x03FF), std::ldexp(1023.0f, -24));  // largest subnormal
  EXPECT_EQ(half_to_float(0x0400), std::ldexp(1.0f, -14));  // smallest normal
  EXPECT_EQ(bits(half_to_float(0x8000)), 0x80000000u);  // -0
  EXPECT_EQ(half_to_float(0x7C00), INFINITY);
  EXPECT_EQ(bits(half_to_float(0x7C01)), 0x7F802000u);  // signalling NaN: payload kept, not quieted
  EXPECT_EQ(bits(half_to_float(0xFE00)), 0xFFC00000u);
  // Every finite half is exact: converting back through double gives the same value.
  for (uint32_t h = 0; h < 65536; ++h) {
    if (((h >> 10) & 0x1F) == 0x1F) continue;
    const int e = static_cast<int>((h >> 10) & 0x1F);
    const double m = (h & 0x3FF) + (e ? 1024.0 : 0.0);
    const double v = std::ldexp(m, (e ? e : 1) - 25) * ((h & 0x8000) ? -1 : 1);
    ASSERT_EQ(static_cast<double>(half_to_float(static_cast<uint16_t>(h))), v) << std::hex << h;
  }
}

TEST(Q1_HalfAndBf16, EveryBf16MatchesNumpy) {
  std::vector<float> all(65536);
  for (uint32_t b = 0; b < 65536; ++b) {
    all[b] = bf16_to_float(static_cast<uint16_t>(b));
    ASSERT_EQ(bits(all[b]), b << 16);
  }
  // gguf-py's BF16.dequantize_blocks over every pattern, SHA-256.
  EXPECT_EQ(sha256_floats(all), "9207d7eb28680a098c73dbe536d1ff7b94311dc417b9a385e0af6660683e93ca");
}

TEST(Q2_PlainTypes, F32IsACopyOfTheBits) {
  test::Writer in;
  const uint32_t pats[] = {0x3F800000u, 0x7FC00001u, 0xFF800000u, 0x00000001u, 0x80000000u};
  for (uint32_t p : pats) in.put(p);
  const auto out = run(0, in.b, 5);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(bits(out[i]), pats[i]);
}

TEST(Q2_PlainTypes, F16AndBf16Elementwise) {
  test::Writer in;
  in.put<uint16_t>(0x3C00).put<uint16_t>(0xBC00).put<uint16_t>(0x0001);
  const auto h = run(1, in.b, 3);
  EXPECT_EQ(h[0], 1.0f);
  EXPECT_EQ(h[1], -1.0f);
  EXPECT_EQ(h[2], std::ldexp(1.0f, -24));
  const auto b = run(30, in.b, 3);
  EXPECT_EQ(bits(b[0]), 0x3C000000u);
  EXPECT_EQ(bits(b[1]), 0xBC000000u);
  EXPECT_EQ(bits(b[2]), 0x00010000u);
}

TEST(Q3_Q8_0, BlockIsScaleTimesInt8) {
  SplitMix64 r{8};
  for (int trial = 0; trial < 200; ++trial) {
    test::Writer in;
    const uint16_t d = random_half(r);
    int8_t q[32];
    in.put(d);
    for (int j = 0; j < 32; ++j) in.put(q[j] = static_cast<int8_t>(r.next()));
    const auto out = run(8, in.b, 32);
    const double dd = half_to_float(d);
    for (int j = 0; j < 32; ++j) ASSERT_EQ(static_cast<double>(out[j]), dd * q[j]) << j;  // the product is exact
  }
  // Known bytes: d = 0.5, q = -128, 127.
  test::Writer in;
  in.put<uint16_t>(0x3800).put<int8_t>(-128).put<int8_t>(127);
  for (int j = 2; j < 32; ++j) in.put<int8_t>(static_cast<int8_t>(j));
  const auto out = run(8, in.b, 32);
  EXPECT_EQ(out[0], -64.0f);
  EXPECT_EQ(out[1], 63.5f);
  EXPECT_EQ(out[31], 15.5f);
}

TEST(Q4_Q4_0, LowNibblesFirstMinus8) {
  SplitMix64 r{4};
  for (int trial = 0; trial < 200; ++trial) {
    test::Writer in;
    const uint16_t d = random_half(r);
    uint8_t qs[16];
    in.put(d);
    for (int j = 0; j < 16; ++j) in.put(qs[j] = static_cast<uint8_t>(r.next()));
    const auto out = run(2, in.b, 32);
    const double dd = half_to_float(d);
    for (int j = 0; j < 16; ++j) {
      ASSERT_EQ(static_cast<double>(out[j]), dd * ((qs[j] & 15) - 8));
      ASSERT_EQ(static_cast<double>(out[j + 16]), dd * ((qs[j] >> 4) - 8));
    }
  }
  test::Writer in;
  in.put<uint16_t>(0x4000);  // d = 2
  in.put<uint8_t>(0xF0);     // element 0: 0 - 8, element 16: 15 - 8
  for (int j = 1; j < 16; ++j) in.put<uint8_t>(0x88);
  const auto out = run(2, in.b, 32);
  EXPECT_EQ(out[0], -16.0f);
  EXPECT_EQ(out[16], 14.0f);
  EXPECT_EQ(out[1], 0.0f);
}

TEST(Q5_Q4_1, ScaleTimesNibblePlusMinOneRounding) {
  SplitMix64 r{41};
  int rounded = 0;
  for (int trial = 0; trial < 400; ++trial) {
    test::Writer in;
    const uint16_t d = random_half(r), m = random_half(r);
    uint8_t qs[16];
    in.put(d).put(m);
    for (int j = 0; j < 16; ++j) in.put(qs[j] = static_cast<uint8_t>(r.next()));
    const auto out = run(3, in.b, 32);
    const double dd = half_to_float(d), mm = half_to_float(m);
    for (int j = 0; j < 32; ++j) {
      const int q = j < 16 ? (qs[j] & 15) : (qs[j - 16] >> 4);
      const double exact = dd * q + mm;  // exact in double (Q5)
      ASSERT_EQ(out[j], static_cast<float>(exact)) << "trial " << trial << " j " << j;  // one rounding
      rounded += static_cast<double>(out[j]) != exact;
    }
  }
  EXPECT_GT(rounded, 100);  // the sum does round: the test would see a second rounding
  test::Writer in;
  in.put<uint16_t>(0x3C00).put<uint16_t>(0xC400);  // d = 1, m = -4
  in.put<uint8_t>(0x5A);                            // element 0: 10, element 16: 5
  for (int j = 1; j < 16; ++j) in.put<uint8_t>(0);
  const auto out = run(3, in.b, 32);
  EXPECT_EQ(out[0], 6.0f);
  EXPECT_EQ(out[16], 1.0f);
  EXPECT_EQ(out[1], -4.0f);
}

TEST(Q5_Q4_1, TensorsAndErrors) {
  test::TestGguf g;
  g.tensors.push_back({"q", {32, 2}, 3, std::vector<uint8_t>(40, 0x11)});
  g.tensors.push_back({"k", {256}, 12, std::vector<uint8_t>(144, 0)});  // Q4_K: read, not dequantized
  const GgufFile f = GgufFile::parse(g.bytes());
  const auto q = dequantize(*f.find_tensor("q"));
  ASSERT_EQ(q.size(), 64u);
  // d = m = fp16 0x1111: every element is d * 1 + m.
  const float d = half_to_float(0x1111);
  for (float v : q) EXPECT_EQ(v, d + d);
  try {
    dequantize(*f.find_tensor("k"));
    ADD_FAILURE() << "Q4_K dequantized";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kBadModel);
    EXPECT_NE(std::string(e.what()).find("tensor 'k': tensor type Q4_K is not supported"), std::string::npos) << e.what();
  }
  std::vector<float> out(32);
  const std::vector<uint8_t> short_in(19);
  EXPECT_THROW(dequantize(3, short_in, out, "x"), Error);
  std::vector<float> odd(31);
  EXPECT_THROW(dequantize(3, std::vector<uint8_t>(20), odd, "x"), Error);
}
