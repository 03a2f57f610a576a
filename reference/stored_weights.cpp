#include "reference/stored_weights.hpp"

#include <bit>

namespace akv {

int qk_source_row(int r, int head_dim) {
  const int half = head_dim / 2;
  return 2 * (r % half) + r / half;
}

int StoredMatrix::source_row(int r) const {
  if (qk_head_dim <= 0) return r;
  return (r / qk_head_dim) * qk_head_dim + qk_source_row(r % qk_head_dim, qk_head_dim);
}

std::vector<float> StoredWeights::dense(const StoredMatrix& m) const {
  std::vector<float> out(static_cast<size_t>(m.rows) * static_cast<size_t>(m.cols));
  for (int r = 0; r < m.rows; ++r) row(m, r, out.data() + static_cast<size_t>(r) * static_cast<size_t>(m.cols));
  return out;
}

float half_bits_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 0x1F;
  uint32_t man = h & 0x3FF;
  uint32_t bits;
  if (exp == 0x1F) {
    bits = sign | 0x7F800000u | (man << 13);  // inf, or NaN with its payload
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (man << 13);  // rebias 15 -> 127
  } else if (man == 0) {
    bits = sign;  // +-0
  } else {
    // Subnormal: man * 2^-24. Shift the leading 1 up to bit 10, counting the steps.
    uint32_t e = 113;  // exponent field of 2^-14, decremented per shift
    while ((man & 0x400) == 0) {
      man <<= 1;
      --e;
    }
    bits = sign | (e << 23) | ((man & 0x3FF) << 13);
  }
  return std::bit_cast<float>(bits);
}

}  // namespace akv
