#include "reference/kv_types.hpp"

#include <bit>
#include <cmath>
#include <cstring>

#include "reference/config.hpp"
#include "reference/error.hpp"
#include "reference/stored_weights.hpp"

namespace akv {

const char* kv_type_name(KvType t) {
  switch (t) {
    case KvType::kF32: return "f32";
    case KvType::kF16: return "f16";
    case KvType::kQ8_0: return "q8_0";
  }
  return "?";
}

std::vector<std::string> kv_type_names() { return {"f32", "f16", "q8_0"}; }

KvType parse_kv_type(std::string_view name) {
  for (KvType t : {KvType::kF32, KvType::kF16, KvType::kQ8_0})
    if (name == kv_type_name(t)) return t;
  std::string shown;
  for (char ch : name.substr(0, 40)) shown += (ch >= 0x20 && ch < 0x7f) ? ch : '?';
  throw Error(ErrorCode::kBadInput, "unknown kv type '" + shown + "' (expected one of: f32, f16, q8_0)");
}

size_t kv_row_bytes(KvType t, int n) {
  const size_t m = static_cast<size_t>(n);
  switch (t) {
    case KvType::kF32: return 4 * m;
    case KvType::kF16: return 2 * m;
    case KvType::kQ8_0: return m / kKvQ8Block * kKvQ8BlockBytes;
  }
  return 4 * m;
}

void check_kv_type(KvType t, const Config& c) {
  if (t == KvType::kQ8_0 && c.head_dim % kKvQ8Block != 0)
    throw Error(ErrorCode::kBadInput, "kv type q8_0 stores blocks of 32 values within a head, and model '" + c.name +
                                          "' has head_dim " + std::to_string(c.head_dim) +
                                          " (not a multiple of 32); use --kv-type f16 or f32");
}

uint16_t float_to_half_bits(float x) {
  const uint32_t b = std::bit_cast<uint32_t>(x);
  const uint16_t sign = static_cast<uint16_t>((b >> 16) & 0x8000u);
  const uint32_t a = b & 0x7fffffffu;
  if (a > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u | ((a >> 13) & 0x3ffu));  // NaN: quiet, top payload
  if (a >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // >= 65520 (and inf): rounds to inf
  if (a >= 0x38800000u) {  // >= 2^-14: a normal half; round the 13 dropped bits to nearest even
    const uint32_t r = a + 0xfffu + ((a >> 13) & 1u);
    return static_cast<uint16_t>(sign | ((r - 0x38000000u) >> 13));  // rebias 127 -> 15; a carry moves the exponent
  }
  // Below 2^-14: the half is round(|x| / 2^-24) subnormal units (0x400 when it rounds up to 2^-14).
  const uint32_t e = a >> 23;
  if (e < 102) return sign;  // |x| < 2^-25: rounds to zero (2^-25 itself is a tie with 0: even)
  const uint32_t m = (a & 0x7fffffu) | 0x800000u;  // |x| = m * 2^(e - 150)
  const uint32_t s = 126 - e;                        // units = m / 2^s, 14 <= s <= 24
  uint32_t q = m >> s;
  const uint32_t rem = m & ((1u << s) - 1), half = 1u << (s - 1);
  if (rem > half || (rem == half && (q & 1u))) ++q;
  return static_cast<uint16_t>(sign | q);
}

void kv_encode_q8_0_block(const float* x, uint8_t* out) {
  float amax = 0.0f;
  for (int j = 0; j < kKvQ8Block; ++j) {
    const float a = std::fabs(x[j]);
    amax = amax > a ? amax : a;  // ggml's MAX(amax, fabsf(v))
  }
  const float d = amax / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  const uint16_t h = float_to_half_bits(d);
  out[0] = static_cast<uint8_t>(h & 0xff);
  out[1] = static_cast<uint8_t>(h >> 8);
  for (int j = 0; j < kKvQ8Block; ++j) {
    const float q = std::round(x[j] * id);  // roundf: half away from zero
    const int8_t v = (q >= -127.0f && q <= 127.0f) ? static_cast<int8_t>(q) : int8_t{0};  // NaN fails both compares
    out[2 + j] = static_cast<uint8_t>(v);
  }
}

void kv_encode_row(KvType t, const float* x, int n, uint8_t* out) {
  switch (t) {
    case KvType::kF32: std::memcpy(out, x, 4 * static_cast<size_t>(n)); return;
    case KvType::kF16:
      for (int i = 0; i < n; ++i) {
        const uint16_t h = float_to_half_bits(x[i]);
        out[2 * i] = static_cast<uint8_t>(h & 0xff);
        out[2 * i + 1] = static_cast<uint8_t>(h >> 8);
      }
      return;
    case KvType::kQ8_0:
      for (int b = 0; b < n / kKvQ8Block; ++b) kv_encode_q8_0_block(x + b * kKvQ8Block, out + b * kKvQ8BlockBytes);
      return;
  }
}

void kv_decode_row(KvType t, const uint8_t* in, int n, float* out) {
  switch (t) {
    case KvType::kF32: std::memcpy(out, in, 4 * static_cast<size_t>(n)); return;
    case KvType::kF16:
      for (int i = 0; i < n; ++i) out[i] = half_bits_to_float(static_cast<uint16_t>(in[2 * i] | (in[2 * i + 1] << 8)));
      return;
    case KvType::kQ8_0:
      for (int b = 0; b < n / kKvQ8Block; ++b) {
        const uint8_t* blk = in + b * kKvQ8BlockBytes;
        const float d = half_bits_to_float(static_cast<uint16_t>(blk[0] | (blk[1] << 8)));
        for (int j = 0; j < kKvQ8Block; ++j) out[b * kKvQ8Block + j] = static_cast<float>(static_cast<int8_t>(blk[2 + j])) * d;
      }
      return;
  }
}

}  // namespace akv
