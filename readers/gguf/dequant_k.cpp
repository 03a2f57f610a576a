#include "readers/gguf/dequant_k.hpp"

#include "readers/gguf/dequant.hpp"

namespace akv::readers::kquant {

namespace {
float half_at(const uint8_t* p) { return half_to_float(static_cast<uint16_t>(p[0] | (p[1] << 8))); }
}  // namespace

void scale_min(const uint8_t* s, int i, int& sc, int& m) {
  if (i < 4) {
    sc = s[i] & 0x3F;
    m = s[i + 4] & 0x3F;
  } else {  // low 4 bits from byte i + 4, high 2 bits from the top of byte i - 4 (sc) or i (m)
    sc = (s[i + 4] & 0x0F) | ((s[i - 4] >> 6) << 4);
    m = (s[i + 4] >> 4) | ((s[i] >> 6) << 4);
  }
}

namespace {

// Q8: fp16 d, fp16 dmin, 12 scale bytes, (Q5_K: 32 bytes qh,) 128 bytes of nibbles. Sub-block i
// (32 elements) takes nibble i % 2 of bytes 32 * (i / 2) ..; bit i of qh[l] is the fifth bit of
// element 32 * i + l. y = (d * sc) * q - dmin * m, each op rounded to binary32, no FMA.
void k_quant(const uint8_t* b, const uint8_t* qh, const uint8_t* qs, float* y) {
  const float d = half_at(b), dmin = half_at(b + 2);
  for (int i = 0; i < 8; ++i) {
    int sc, m;
    scale_min(b + 4, i, sc, m);
    const float d1 = d * static_cast<float>(sc), m1 = dmin * static_cast<float>(m);
    const uint8_t* q = qs + 32 * (i / 2);
    const int shift = 4 * (i % 2);
    for (int l = 0; l < 32; ++l) {
      const int v = ((q[l] >> shift) & 0x0F) | (qh ? ((qh[l] >> i) & 1) << 4 : 0);
      const float p = d1 * static_cast<float>(v);
      y[32 * i + l] = p - m1;
    }
  }
}

}  // namespace

void q4_k(const uint8_t* b, float* y) { k_quant(b, nullptr, b + 16, y); }
void q5_k(const uint8_t* b, float* y) { k_quant(b, b + 16, b + 48, y); }

// Q9: 128 bytes ql, 64 bytes qh, 16 x int8 scales, fp16 d. Element e = 128 h + r: low 4 bits
// are nibble r / 64 of ql[64 h + r % 64], high 2 bits are bits 2 (r / 32) of qh[32 h + r % 32];
// y = (d * sc[e / 16]) * (q - 32).
void q6_k(const uint8_t* b, float* y) {
  const uint8_t* ql = b;
  const uint8_t* qh = b + 128;
  const float d = half_at(b + 208);
  for (int e = 0; e < 256; ++e) {
    const int h = e / 128, r = e % 128;
    const int lo = (ql[64 * h + r % 64] >> (4 * (r / 64))) & 0x0F;
    const int hi = (qh[32 * h + r % 32] >> (2 * (r / 32))) & 0x03;
    const float ds = d * static_cast<float>(static_cast<int8_t>(b[192 + e / 16]));
    y[e] = ds * static_cast<float>((lo | (hi << 4)) - 32);
  }
}

}  // namespace akv::readers::kquant
