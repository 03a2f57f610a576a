#include <cstring>
#include <new>

#include "optimized/cpu/kernels.hpp"

namespace akv::cpu {

PackedMatrix pack_rows(const std::vector<const std::vector<float>*>& parts, int n) {
  PackedMatrix m;
  m.n = n;
  for (const auto* p : parts) m.d += static_cast<int>(p->size() / static_cast<size_t>(n));
  const size_t floats = static_cast<size_t>(m.panels()) * n * kLanes;
  const size_t bytes = (floats * sizeof(float) + 63) / 64 * 64;
  m.data.reset(static_cast<float*>(std::aligned_alloc(64, bytes)));
  if (!m.data) throw std::bad_alloc();
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
