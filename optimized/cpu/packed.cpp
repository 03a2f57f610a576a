#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>

#include "optimized/cpu/kernels.hpp"
#include "reference/streamed_storage.hpp"

namespace akv::cpu {

std::unique_ptr<float[], FreeDeleter> aligned_panel_storage(size_t bytes) {
  // A 4 KiB page holds 11 Q4 blocks of one panel, so a streaming matmul would miss the TLB
  // every few hundred FMAs (the 32 MB classifier: 1.45 against 1.06 ms a token).
  return std::unique_ptr<float[], FreeDeleter>(static_cast<float*>(allocate_streamed(bytes)));
}

std::shared_ptr<float[]> PanelArena::take(size_t bytes) {
  constexpr size_t kBlock = size_t{32} << 20;
  bytes = (bytes + 63) / 64 * 64;
  if (bytes > size_ - used_) {
    size_ = std::max(bytes, kBlock);
    block_.reset(static_cast<unsigned char*>(allocate_streamed(size_)), [](unsigned char* p) { std::free(p); });
    used_ = 0;
  }
  std::shared_ptr<float[]> p(block_, reinterpret_cast<float*>(block_.get() + used_));  // shares the block
  used_ += bytes;
  return p;
}

namespace {
std::shared_ptr<float[]> panel_storage(size_t bytes, PanelArena* arena) {
  if (arena != nullptr) return arena->take(bytes);
  return aligned_panel_storage(bytes);
}
}  // namespace

PackedMatrix pack_rows(const std::vector<const std::vector<float>*>& parts, int n, PanelArena* arena) {
  PackedMatrix m;
  m.n = n;
  for (const auto* p : parts) m.d += static_cast<int>(p->size() / static_cast<size_t>(n));
  const size_t floats = static_cast<size_t>(m.panels()) * n * kLanes;
  const size_t bytes = floats * sizeof(float);
  m.data = panel_storage(bytes, arena);
  std::memset(m.data.get(), 0, bytes);  // the zero padding of the last panel (K1)
  int row = 0;
  for (const auto* p : parts) {
    const int rows = static_cast<int>(p->size() / static_cast<size_t>(n));
    for (int i = 0; i < rows; ++i, ++row) {
      float* dst = m.data.get() + static_cast<size_t>(row / kLanes) * n * kLanes + row % kLanes;
      const float* src = p->data() + static_cast<size_t>(i) * n;
      for (int k = 0; k < n; ++k) dst[static_cast<size_t>(k) * kLanes] = src[k];
    }
  }
  return m;
}

namespace {
// ggml type ids (spec/gguf.md F4) of the formats a quantized panel takes.
constexpr uint32_t kGgmlQ4_0 = 2, kGgmlQ4_1 = 3, kGgmlQ8_0 = 8;

PanelFormat panel_format(uint32_t type) {
  switch (type) {
    case kGgmlQ4_0: return PanelFormat::kQ4_0;
    case kGgmlQ4_1: return PanelFormat::kQ4_1;
    case kGgmlQ8_0: return PanelFormat::kQ8_0;
    default: throw std::invalid_argument("pack_stored: ggml type " + std::to_string(type) + " has no quantized panel");
  }
}

uint16_t le16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }

// A Q4 file block's 16 bytes of nibbles (byte j: k = j low, k = j + 16 high) into lane c's four
// little-endian 32-bit words: word t (at dst + 64t + 4c) holds k = 8t + s at bits 4s (K15).
void put_nibble_words(const uint8_t* q, uint8_t* dst, int c) {
  for (int t = 0; t < 4; ++t) {
    uint32_t w = 0;
    for (int s = 0; s < 8; ++s) {
      const int k = 8 * t + s;
      w |= static_cast<uint32_t>(k < 16 ? q[k] & 15 : q[k - 16] >> 4) << (4 * s);
    }
    for (int b = 0; b < 4; ++b) dst[64 * t + 4 * c + b] = static_cast<uint8_t>(w >> (8 * b));
  }
}

// One file block (src: its bytes) into lane c of a panel block (dst): scales widened once
// (half_bits_to_float is exact, Q1), Q8_0's quants copied as the file holds them, Q4's as words.
void put_block(PanelFormat f, const uint8_t* src, uint8_t* dst, int c) {
  float* d = reinterpret_cast<float*>(dst);
  d[c] = half_bits_to_float(le16(src));
  switch (f) {
    case PanelFormat::kQ8_0:  // fp16 d, 32 x int8
      for (int j = 0; j < 32; ++j) dst[64 + j * kLanes + c] = src[2 + j];
      break;
    case PanelFormat::kQ4_0:  // fp16 d, 16 bytes of nibbles
      put_nibble_words(src + 2, dst + 64, c);
      break;
    case PanelFormat::kQ4_1:  // fp16 d, fp16 m, 16 bytes of nibbles
      d[kLanes + c] = half_bits_to_float(le16(src + 2));
      put_nibble_words(src + 4, dst + 128, c);
      break;
    case PanelFormat::kF32: break;
  }
}

size_t file_block_bytes(PanelFormat f) { return f == PanelFormat::kQ8_0 ? 34 : f == PanelFormat::kQ4_1 ? 20 : 18; }
}  // namespace

bool packs_quantized(uint32_t ggml_type) {
  return ggml_type == kGgmlQ4_0 || ggml_type == kGgmlQ4_1 || ggml_type == kGgmlQ8_0;
}

PackedMatrix pack_stored(const std::vector<const StoredMatrix*>& parts, int n, PanelArena* arena) {
  if (parts.empty()) throw std::invalid_argument("pack_stored: no matrix");
  PackedMatrix m;
  m.n = n;
  m.format = panel_format(parts[0]->type);
  for (const auto* p : parts) {
    if (panel_format(p->type) != m.format || p->cols != n || n % kQuantBlock != 0)
      throw std::invalid_argument("pack_stored: parts of different types or widths");
    m.d += p->rows;
  }
  const int fb = panel_block_bytes(m.format);
  const size_t bytes = static_cast<size_t>(m.panels()) * m.panel_bytes();
  m.data = panel_storage(bytes, arena);
  std::memset(m.data.get(), 0, bytes);  // the zero weights of the last panel's padding (K1)
  uint8_t* base = reinterpret_cast<uint8_t*>(m.data.get());
  const size_t sb = file_block_bytes(m.format);
  int row = 0;
  for (const auto* p : parts)
    for (int i = 0; i < p->rows; ++i, ++row) {
      uint8_t* panel = base + static_cast<size_t>(row / kLanes) * m.panel_bytes();
      const uint8_t* src = p->row(i);
      for (int b = 0; b < n / kQuantBlock; ++b)
        put_block(m.format, src + b * sb, panel + static_cast<size_t>(b) * fb, row % kLanes);
    }
  return m;
}

const Kernels& kernels_for(Isa isa) {
  switch (isa) {
    case Isa::kAvx512: return kernels_avx512();
    case Isa::kAvx512Simde: return kernels_avx512_simde();
    case Isa::kAvx2: return kernels_avx2();
    case Isa::kPortable: break;
  }
  return kernels_portable();
}

}  // namespace akv::cpu
