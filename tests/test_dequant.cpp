// Dequantization to float32, bit-exact (spec/gguf.md Q1-Q5, Q7-Q9): every binary16 and bfloat16
// pattern against digests of numpy's conversion, and hand-built and random blocks of each type
// checked against an independent computation in double (exact here, see Q3-Q9).
#include <gtest/gtest.h>

#include <array>
#include <bit>
#include <cmath>
#include <cstring>

#include "tests/support/gguf_builder.hpp"
#include "readers/gguf/dequant.hpp"
#include "readers/gguf/dequant_k.hpp"
#include "readers/gguf/ggml_type.hpp"
#include "reference/error.hpp"
#include "reference/prng.hpp"
#include "runtime/digest.hpp"

using namespace akv;
using namespace akv::readers;

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
  g.tensors.push_back({"k", {256}, 10, std::vector<uint8_t>(84, 0)});  // Q2_K: read, not dequantized
  const GgufFile f = GgufFile::parse(g.bytes());
  const auto q = dequantize(*f.find_tensor("q"));
  ASSERT_EQ(q.size(), 64u);
  // d = m = fp16 0x1111: every element is d * 1 + m.
  const float d = half_to_float(0x1111);
  for (float v : q) EXPECT_EQ(v, d + d);
  try {
    dequantize(*f.find_tensor("k"));
    ADD_FAILURE() << "Q2_K dequantized";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kBadModel);
    EXPECT_NE(std::string(e.what()).find("tensor 'k': tensor type Q2_K is not supported"), std::string::npos) << e.what();
  }
  std::vector<float> out(32);
  const std::vector<uint8_t> short_in(19);
  EXPECT_THROW(dequantize(3, short_in, out, "x"), Error);
  std::vector<float> odd(31);
  EXPECT_THROW(dequantize(3, std::vector<uint8_t>(20), odd, "x"), Error);
}

namespace {

// Packs eight 6-bit scales and mins into Q4_K / Q5_K's 12 bytes, as Q8 lays them out.
std::array<uint8_t, 12> pack_scales(const int (&sc)[8], const int (&m)[8]) {
  std::array<uint8_t, 12> s{};
  for (int i = 0; i < 4; ++i) {
    s[i] = static_cast<uint8_t>(sc[i] | (sc[i + 4] >> 4) << 6);
    s[i + 4] = static_cast<uint8_t>(m[i] | (m[i + 4] >> 4) << 6);
    s[i + 8] = static_cast<uint8_t>((sc[i + 4] & 15) | (m[i + 4] & 15) << 4);
  }
  return s;
}

// A Q4_K (five_bit false) or Q5_K block from its values: q[e] in [0, 16) or [0, 32).
std::vector<uint8_t> k_block(bool five_bit, uint16_t d, uint16_t dmin, const int (&sc)[8], const int (&m)[8], const int (&q)[256]) {
  std::vector<uint8_t> qh(32, 0), qs(128, 0);
  for (int e = 0; e < 256; ++e) {
    const int i = e / 32, l = e % 32;  // sub-block i: nibble i % 2 of byte 32 (i / 2) + l
    qs[32 * (i / 2) + l] |= static_cast<uint8_t>((q[e] & 15) << (4 * (i % 2)));
    qh[l] |= static_cast<uint8_t>((q[e] >> 4) << i);
  }
  test::Writer w;
  w.put(d).put(dmin);
  for (uint8_t b : pack_scales(sc, m)) w.put(b);
  if (five_bit) w.raw(qh);
  return w.raw(qs).b;
}

// A Q6_K block from q[e] in [-32, 32), int8 scales and d, laid out as Q9.
std::vector<uint8_t> q6_block(uint16_t d, const int8_t (&sc)[16], const int (&q)[256]) {
  std::vector<uint8_t> ql(128, 0), qh(64, 0);
  for (int e = 0; e < 256; ++e) {
    const int h = e / 128, r = e % 128, u = q[e] + 32;
    ql[64 * h + r % 64] |= static_cast<uint8_t>((u & 15) << (4 * (r / 64)));
    qh[32 * h + r % 32] |= static_cast<uint8_t>((u >> 4) << (2 * (r / 32)));
  }
  test::Writer w;
  w.raw(ql).raw(qh);
  for (int8_t s : sc) w.put(s);
  return w.put(d).b;
}

// y[e] == v for each {e, v}: values of hand-built blocks, exact in binary32.
void expect_at(const std::vector<float>& y, std::initializer_list<std::pair<int, float>> want) {
  for (const auto& [e, v] : want) EXPECT_EQ(y[e], v) << "element " << e;
}

// Every new type: a count that is not whole blocks, or bytes that do not hold them, is refused
// naming the tensor; so is a file whose row is not whole blocks (F4).
void expect_size_errors(uint32_t type, size_t block, size_t bytes) {
  const auto refused = [&](size_t n, size_t nb, const std::string& needle) {
    std::vector<float> out(n);
    try {
      dequantize(type, std::vector<uint8_t>(nb), out, "w.gguf: tensor 'blk.0.w'");
      ADD_FAILURE() << type_name(type) << ": " << n << " elements from " << nb << " bytes accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kBadModel);
      EXPECT_NE(std::string(e.what()).find("w.gguf: tensor 'blk.0.w': " + needle), std::string::npos) << e.what();
    }
  };
  refused(block + 1, 2 * bytes, std::to_string(block + 1) + " elements are not whole " + type_name(type) + " blocks");
  refused(block / 2, bytes, std::to_string(block / 2) + " elements are not whole " + type_name(type) + " blocks");
  refused(block, bytes - 1, std::to_string(bytes - 1) + " bytes do not hold " + std::to_string(block) + " elements of " + type_name(type));
  refused(block, bytes + 1, std::to_string(bytes + 1) + " bytes do not hold");
  test::TestGguf g;
  g.tensors.push_back({"blk.0.w", {block / 2, 2}, type, std::vector<uint8_t>(bytes, 0)});
  try {
    GgufFile::parse(g.bytes(), "w.gguf");
    ADD_FAILURE() << type_name(type) << ": half a block a row parsed";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tensor 'blk.0.w'.dims[0]: row length " + std::to_string(block / 2) +
                                         " is not a multiple of " + type_name(type)),
              std::string::npos)
        << e.what();
  }
}

}  // namespace

TEST(Q7_Q5_0AndQ5_1, FifthBitFromQhRandomBlocks) {
  SplitMix64 r{57};
  int rounded = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const uint16_t d = random_half(r), m = random_half(r);
    const auto qh = static_cast<uint32_t>(r.next());
    uint8_t qs[16];
    for (uint8_t& b : qs) b = static_cast<uint8_t>(r.next());
    int q[32];  // the 5-bit values by Q7, from the bytes
    for (int j = 0; j < 32; ++j) q[j] = (j < 16 ? qs[j] & 15 : qs[j - 16] >> 4) + 16 * static_cast<int>((qh >> j) & 1);
    test::Writer b0, b1;
    b0.put(d).put(qh);
    b1.put(d).put(m).put(qh);
    for (uint8_t b : qs) b0.put(b), b1.put(b);
    const auto y0 = run(6, b0.b, 32), y1 = run(7, b1.b, 32);
    const double dd = half_to_float(d), mm = half_to_float(m);
    for (int j = 0; j < 32; ++j) {
      ASSERT_EQ(static_cast<double>(y0[j]), dd * (q[j] - 16)) << "Q5_0 trial " << trial << " j " << j;  // exact
      const double exact = dd * q[j] + mm;  // exact in double: one rounding to binary32 (Q7)
      ASSERT_EQ(y1[j], static_cast<float>(exact)) << "Q5_1 trial " << trial << " j " << j;
      rounded += static_cast<double>(y1[j]) != exact;
    }
  }
  EXPECT_GT(rounded, 100);  // the sum does round: a second rounding would be seen
}

TEST(Q7_Q5_0AndQ5_1, HandBuiltBlocks) {
  // Q5_0, d = 0.5: qh bit 0 (element 0), bit 16 (element 16), bit 31 (element 31).
  test::Writer b;
  b.put<uint16_t>(0x3800).put<uint32_t>(0x80010001u);
  b.put<uint8_t>(0x3A);  // element 0: nibble 10, element 16: nibble 3
  for (int j = 1; j < 15; ++j) b.put<uint8_t>(0);
  b.put<uint8_t>(0xC5);  // element 15: nibble 5, element 31: nibble 12
  // (10 + 16 - 16) * 0.5, (5 - 16) * 0.5, (3 + 16 - 16) * 0.5, (12 + 16 - 16) * 0.5, (0 - 16) * 0.5
  expect_at(run(6, b.b, 32), {{0, 5}, {15, -5.5}, {16, 1.5}, {31, 6}, {1, -8}});
  // Q5_1, d = 2, m = -1: element 0 = 2 * 26 - 1, element 31 = 2 * 28 - 1, element 1 = -1.
  test::Writer c;
  c.put<uint16_t>(0x4000).put<uint16_t>(0xBC00).put<uint32_t>(0x80010001u);
  c.raw(std::vector<uint8_t>(b.b.begin() + 6, b.b.end()));
  expect_at(run(7, c.b, 32), {{0, 51}, {15, 9}, {16, 37}, {31, 55}, {1, -1}});
}

TEST(Q8_Q4_KAndQ5_K, ScaleMinUnpacking) {
  const int sc[8] = {1, 63, 17, 32, 5, 48, 63, 33}, m[8] = {2, 0, 62, 31, 60, 7, 16, 47};
  const auto s = pack_scales(sc, m);
  for (int i = 0; i < 8; ++i) {
    int a = -1, b = -1;
    kquant::scale_min(s.data(), i, a, b);
    EXPECT_EQ(a, sc[i]) << "sub-block " << i;
    EXPECT_EQ(b, m[i]) << "sub-block " << i;
  }
}

TEST(Q8_Q4_KAndQ5_K, RandomBlocksScaleTimesQMinusMinOneRounding) {
  SplitMix64 r{12};
  int rounded = 0;
  for (int trial = 0; trial < 200; ++trial) {
    const bool five = trial % 2;
    const uint16_t d = random_half(r), dmin = random_half(r);
    int sc[8], m[8], q[256];
    for (int i = 0; i < 8; ++i) sc[i] = static_cast<int>(r.next() % 64), m[i] = static_cast<int>(r.next() % 64);
    for (int& v : q) v = static_cast<int>(r.next() % (five ? 32 : 16));
    const auto y = run(five ? 13 : 12, k_block(five, d, dmin, sc, m, q), 256);
    const double dd = half_to_float(d), dm = half_to_float(dmin);
    for (int e = 0; e < 256; ++e) {
      // Both products exact, the difference exact in double (Q8): one rounding to binary32.
      const double exact = dd * sc[e / 32] * q[e] - dm * m[e / 32];
      ASSERT_EQ(y[e], static_cast<float>(exact)) << (five ? "Q5_K" : "Q4_K") << " trial " << trial << " e " << e;
      rounded += static_cast<double>(y[e]) != exact;
    }
  }
  EXPECT_GT(rounded, 1000);
}

TEST(Q8_Q4_KAndQ5_K, HandBuiltBlocks) {
  // d = 1, dmin = 0.5; every scale 1 and min 0 but sub-block 1 (min 2) and 7 (scale 40, min 33).
  const int sc[8] = {1, 1, 1, 1, 1, 1, 1, 40}, m[8] = {0, 2, 0, 0, 0, 0, 0, 33};
  const std::array<uint8_t, 12> packed = {0x01, 0x01, 0x01, 0x81, 0x00, 0x02, 0x00, 0x80, 0x01, 0x01, 0x01, 0x18};
  EXPECT_EQ(pack_scales(sc, m), packed);  // the packer the random test uses, by hand
  std::vector<uint8_t> b4 = {0x00, 0x3C, 0x00, 0x38};
  b4.insert(b4.end(), packed.begin(), packed.end());
  std::vector<uint8_t> qs(128, 0);
  qs[0] = 0x21;    // element 0: 1, element 32: 2
  qs[15] = 0x07;   // element 15: 7, element 47: 0
  qs[16] = 0x08;   // element 16: 8
  qs[31] = 0x43;   // element 31: 3, element 63: 4
  qs[127] = 0x65;  // element 223: 5, element 255: 6
  std::vector<uint8_t> b5 = b4;
  b4.insert(b4.end(), qs.begin(), qs.end());
  // y = sc * q - 0.5 * m: element 32: 1 * 2 - 0.5 * 2; 47: 0 - 1; 254: 40 * 0 - 16.5; 255: 40 * 6 - 16.5.
  expect_at(run(12, b4, 256), {{0, 1}, {15, 7}, {16, 8}, {31, 3}, {32, 1}, {47, -1}, {63, 3}, {223, 5}, {254, -16.5}, {255, 223.5}});
  // Q5_K: the same with qh; bit i of qh[l] is 16 in element 32 i + l.
  std::vector<uint8_t> qh(32, 0);
  qh[0] = 0x03;   // elements 0 and 32
  qh[15] = 0x01;  // element 15
  qh[31] = 0x80;  // element 255
  b5.insert(b5.end(), qh.begin(), qh.end());
  b5.insert(b5.end(), qs.begin(), qs.end());
  // element 32: (2 + 16) - 1; 255: 40 * (6 + 16) - 16.5.
  expect_at(run(13, b5, 256), {{0, 17}, {15, 23}, {16, 8}, {31, 3}, {32, 17}, {47, -1}, {254, -16.5}, {255, 863.5}});
}

TEST(Q9_Q6_K, RandomBlocksScaleThenQ) {
  SplitMix64 r{6};
  for (int trial = 0; trial < 200; ++trial) {
    const uint16_t d = random_half(r);
    int8_t sc[16];
    int q[256];
    for (int8_t& s : sc) s = static_cast<int8_t>(r.next());
    for (int& v : q) v = static_cast<int>(r.next() % 64) - 32;
    const auto y = run(14, q6_block(d, sc, q), 256);
    const double dd = half_to_float(d);
    for (int e = 0; e < 256; ++e)
      ASSERT_EQ(static_cast<double>(y[e]), dd * sc[e / 16] * q[e]) << "trial " << trial << " e " << e;  // exact (Q9)
  }
}

TEST(Q9_Q6_K, HandBuiltBlock) {
  // d = 0.5, scale 3 for elements 0-15, -2 for 240-255, 1 elsewhere; every q -32 but:
  std::vector<uint8_t> b(210, 0);
  b[0] = 0x21;          // ql[0]: element 0 low 1, element 64 low 2
  b[128 + 0] = 0xE4;    // qh[0]: high bits of elements 0, 32, 64, 96 = 0, 1, 2, 3
  b[127] = 0xF5;        // ql[127]: element 191 low 5, element 255 low 15
  b[128 + 63] = 0xC0;   // qh[63]: high bits of elements 159, 191, 223, 255 = 0, 0, 0, 3
  for (int s = 0; s < 16; ++s) b[192 + s] = 1;
  b[192] = 3;
  b[192 + 15] = static_cast<uint8_t>(-2);
  b[208] = 0x00, b[209] = 0x38;
  // 0: 0.5 * 3 * (1 - 32); 15: 0.5 * 3 * -32; 32: 0.5 * (16 - 32); 64: 0.5 * (2 + 32 - 32);
  // 96: 0.5 * (48 - 32); 191: 0.5 * (5 - 32); 240: 0.5 * -2 * -32; 255: 0.5 * -2 * (15 + 48 - 32).
  expect_at(run(14, b, 256), {{0, -46.5}, {15, -48}, {16, -16}, {32, -8}, {64, 1}, {96, 8}, {191, -13.5}, {240, 32}, {255, -31}});
}

TEST(Q7_Q5_0AndQ5_1, SizesNotWholeBlocksAreRefused) {
  expect_size_errors(6, 32, 22);
  expect_size_errors(7, 32, 24);
}

TEST(Q8_Q4_KAndQ5_K, SizesNotWholeBlocksAreRefused) {
  expect_size_errors(12, 256, 144);
  expect_size_errors(13, 256, 176);
}

TEST(Q9_Q6_K, SizesNotWholeBlocksAreRefusedAndQ8_KIsNotSupported) {
  expect_size_errors(14, 256, 210);
  std::vector<float> out(256);
  try {
    dequantize(15, std::vector<uint8_t>(292), out, "tensor 'x'");
    ADD_FAILURE() << "Q8_K dequantized";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tensor 'x': tensor type Q8_K is not supported"), std::string::npos) << e.what();
  }
}

// F8 for the new types: a NaN scale in the second block makes its elements NaN, and the load's
// check (dequantize, then check_finite, as gguf_weights.cpp does) refuses the tensor naming the
// first one.
TEST(F8_FiniteWeights, NanScaleOfEachNewTypeIsRefusedNamingIt) {
  struct Case {
    uint32_t type;
    size_t block, bytes;
    std::vector<size_t> scales;  // byte offsets of the binary16 scales in a block
    size_t nan_at;
  };
  const Case cases[] = {{6, 32, 22, {0}, 0},      {7, 32, 24, {0, 2}, 0},   {7, 32, 24, {0, 2}, 2},
                        {12, 256, 144, {0, 2}, 0}, {12, 256, 144, {0, 2}, 2}, {13, 256, 176, {0, 2}, 0},
                        {14, 256, 210, {208}, 208}};
  for (const Case& c : cases) {
    SplitMix64 r{c.type};
    std::vector<uint8_t> data(2 * 256 / c.block * c.bytes);
    for (auto& b : data) b = static_cast<uint8_t>(r.next());
    for (size_t k = 0; k < data.size() / c.bytes; ++k)  // every scale 1.0 ...
      for (size_t at : c.scales) data[k * c.bytes + at] = 0x00, data[k * c.bytes + at + 1] = 0x3C;
    const size_t nan_block = 256 / c.block;  // ... but one of the first block of row 1: NaN
    data[nan_block * c.bytes + c.nan_at + 1] = 0x7E;
    test::TestGguf g;
    g.tensors.push_back({"blk.0.w", {256, 2}, c.type, data});
    const GgufFile f = GgufFile::parse(g.bytes(), "w.gguf");
    const auto v = dequantize(*f.find_tensor("blk.0.w"), "w.gguf");
    try {
      check_finite(v, 256, "w.gguf: tensor 'blk.0.w'");
      ADD_FAILURE() << type_name(c.type) << ": a NaN scale passed";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kBadModel);
      EXPECT_NE(std::string(e.what()).find("w.gguf: tensor 'blk.0.w'[256] (row 1, column 0): nan"), std::string::npos)
          << type_name(c.type) << ": " << e.what();
    }
  }
}
