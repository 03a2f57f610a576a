#include "readers/gguf/dequant.hpp"

#include <cmath>

#include <bit>
#include <cstring>

#include "readers/gguf/dequant_k.hpp"
#include "reference/error.hpp"
#include "reference/stored_weights.hpp"

namespace akv::readers {

namespace {

uint16_t le16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
uint32_t le32(const uint8_t* p) { return le16(p) | (static_cast<uint32_t>(le16(p + 2)) << 16); }

constexpr const char* kSupported = "akv dequantizes F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K";

// Q3, Q4, Q5, Q7: one block of 32 elements each; products and sums in binary32, no FMA.
void q8_0(const uint8_t* b, float* y) {  // fp16 d, 32 x int8 q: y = q * d
  const float d = half_to_float(le16(b));
  for (int j = 0; j < 32; ++j) y[j] = static_cast<float>(static_cast<int8_t>(b[2 + j])) * d;
}

void q4_0(const uint8_t* b, float* y) {  // fp16 d, 16 bytes of nibbles: y = (q - 8) * d
  const float d = half_to_float(le16(b));
  for (int j = 0; j < 16; ++j) {
    y[j] = static_cast<float>((b[2 + j] & 0x0F) - 8) * d;
    y[j + 16] = static_cast<float>((b[2 + j] >> 4) - 8) * d;
  }
}

void q4_1(const uint8_t* b, float* y) {  // fp16 d, fp16 m, 16 bytes of nibbles: y = d * q + m
  const float d = half_to_float(le16(b));
  const float m = half_to_float(le16(b + 2));
  for (int j = 0; j < 16; ++j) {
    const float p0 = d * static_cast<float>(b[4 + j] & 0x0F);  // rounded product, then the sum
    const float p1 = d * static_cast<float>(b[4 + j] >> 4);
    y[j] = p0 + m;
    y[j + 16] = p1 + m;
  }
}

// Q7: element j's fifth bit is bit j of the little-endian uint32 qh (bits 16-31: the high nibbles).
int q5_value(const uint8_t* qs, uint32_t qh, int j) {
  const int nibble = j < 16 ? (qs[j] & 0x0F) : (qs[j - 16] >> 4);
  return nibble | static_cast<int>(((qh >> j) & 1) << 4);
}

void q5_0(const uint8_t* b, float* y) {  // fp16 d, qh, 16 bytes of nibbles: y = (q - 16) * d
  const float d = half_to_float(le16(b));
  const uint32_t qh = le32(b + 2);
  for (int j = 0; j < 32; ++j) y[j] = static_cast<float>(q5_value(b + 6, qh, j) - 16) * d;
}

void q5_1(const uint8_t* b, float* y) {  // fp16 d, fp16 m, qh, 16 bytes of nibbles: y = d * q + m
  const float d = half_to_float(le16(b));
  const float m = half_to_float(le16(b + 2));
  const uint32_t qh = le32(b + 4);
  for (int j = 0; j < 32; ++j) {
    const float p = d * static_cast<float>(q5_value(b + 8, qh, j));  // rounded product, then the sum
    y[j] = p + m;
  }
}

}  // namespace

float half_to_float(uint16_t h) { return akv::half_bits_to_float(h); }

float bf16_to_float(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }

bool dequantize_supported(uint32_t type) {
  switch (static_cast<TensorType>(type)) {
    case TensorType::kF32: case TensorType::kF16: case TensorType::kBF16:
    case TensorType::kQ8_0: case TensorType::kQ4_0: case TensorType::kQ4_1:
    case TensorType::kQ5_0: case TensorType::kQ5_1:
    case TensorType::kQ4_K: case TensorType::kQ5_K: case TensorType::kQ6_K: return true;
    default: return false;
  }
}

void dequantize(uint32_t type, std::span<const uint8_t> in, std::span<float> out, const std::string& what) {
  const TypeLayout* l = type_layout(type);
  if (!l || !dequantize_supported(type))
    throw Error(ErrorCode::kBadModel, what + ": tensor type " + type_name(type) +
                                          " is not supported (" + kSupported + ")");
  const uint64_t n = out.size();
  if (n % l->block != 0)
    throw Error(ErrorCode::kBadModel, what + ": " + std::to_string(n) + " elements are not whole " + l->name + " blocks");
  const uint64_t blocks = n / l->block;
  if (blocks > in.size() / l->bytes || in.size() != blocks * l->bytes)
    throw Error(ErrorCode::kBadModel, what + ": " + std::to_string(in.size()) + " bytes do not hold " + std::to_string(n) +
                                          " elements of " + l->name);
  const uint8_t* p = in.data();
  float* y = out.data();
  switch (static_cast<TensorType>(type)) {
    case TensorType::kF32: if (n) std::memcpy(y, p, n * 4); break;
    case TensorType::kF16: for (uint64_t i = 0; i < n; ++i) y[i] = half_to_float(le16(p + 2 * i)); break;
    case TensorType::kBF16: for (uint64_t i = 0; i < n; ++i) y[i] = bf16_to_float(le16(p + 2 * i)); break;
    case TensorType::kQ8_0: for (uint64_t k = 0; k < blocks; ++k) q8_0(p + k * 34, y + k * 32); break;
    case TensorType::kQ4_0: for (uint64_t k = 0; k < blocks; ++k) q4_0(p + k * 18, y + k * 32); break;
    case TensorType::kQ4_1: for (uint64_t k = 0; k < blocks; ++k) q4_1(p + k * 20, y + k * 32); break;
    case TensorType::kQ5_0: for (uint64_t k = 0; k < blocks; ++k) q5_0(p + k * 22, y + k * 32); break;
    case TensorType::kQ5_1: for (uint64_t k = 0; k < blocks; ++k) q5_1(p + k * 24, y + k * 32); break;
    case TensorType::kQ4_K: for (uint64_t k = 0; k < blocks; ++k) kquant::q4_k(p + k * 144, y + k * 256); break;
    case TensorType::kQ5_K: for (uint64_t k = 0; k < blocks; ++k) kquant::q5_k(p + k * 176, y + k * 256); break;
    case TensorType::kQ6_K: for (uint64_t k = 0; k < blocks; ++k) kquant::q6_k(p + k * 210, y + k * 256); break;
    default: break;  // unreachable: checked above
  }
}

std::vector<float> dequantize(const TensorInfo& t, const std::string& file) {
  const std::string what = (file.empty() ? "" : file + ": ") + "tensor '" + std::string(t.name) + "'";
  if (!dequantize_supported(t.type))
    throw Error(ErrorCode::kBadModel, what + ": tensor type " + type_name(t.type) +
                                          " is not supported (" + kSupported + ")");
  std::vector<float> out(t.n_elements);
  dequantize(t.type, {t.data, t.n_bytes}, out, what);
  return out;
}

void check_finite(std::span<const float> v, size_t row_len, const std::string& where, size_t first) {
  for (size_t j = 0; j < v.size(); ++j) {
    if (std::isfinite(v[j])) continue;
    const size_t i = first + j;
    const size_t n = row_len ? row_len : 1;
    throw Error(ErrorCode::kBadModel,
                where + "[" + std::to_string(i) + "] (row " + std::to_string(i / n) + ", column " + std::to_string(i % n) +
                    "): " + (std::isnan(v[j]) ? "nan" : v[j] > 0 ? "inf" : "-inf") +
                    ": a weight that is not finite makes every value it reaches NaN, so no comparison could prove "
                    "anything (spec/gguf.md F8)");
  }
}

}  // namespace akv::readers
