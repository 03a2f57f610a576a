// Storage the kernels stream rows from is 64-byte aligned (spec/kernels-cpu.md K15, "Where it
// is dequantized"): the packed panels, the cpu backend's scratch and the KV cache rows. No bit
// depends on it; speed does: a 64-byte load that straddles two cache lines cost the prefill
// matmul 13-16% (docs/performance.md). glibc hands out large blocks 16 bytes past a page, so a
// plain std::vector<float> of a long cache fails these checks.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "optimized/cpu/cpu_backend.hpp"
#include "optimized/cpu/kernels.hpp"
#include "reference/kv_cache.hpp"
#include "support.hpp"

using namespace akv;

namespace {
bool aligned64(const void* p) { return reinterpret_cast<uintptr_t>(p) % 64 == 0; }
}  // namespace

TEST(K15_Storage, CacheRowsAre64ByteAlignedAtEverySize) {
  const auto m = test::tiny();
  KVCache c(m->config);
  // Small blocks come from the heap, large ones (past glibc's mmap threshold) from mmap.
  for (size_t add : {size_t{1}, size_t{7}, size_t{200}, size_t{5000}, size_t{60000}}) {
    c.grow(add);
    for (int l = 0; l < c.n_layers(); ++l) {
      EXPECT_TRUE(aligned64(c.k(l))) << "keys of layer " << l << " at " << c.size() << " entries";
      EXPECT_TRUE(aligned64(c.v(l))) << "values of layer " << l << " at " << c.size() << " entries";
    }
  }
  c.truncate(3);
  for (int l = 0; l < c.n_layers(); ++l) EXPECT_TRUE(aligned64(c.k(l)) && aligned64(c.v(l)));
}

TEST(K15_Storage, ScratchAndPackedPanelsAre64ByteAligned) {
  for (size_t n : {size_t{16}, size_t{1000}, size_t{1} << 20}) {
    cpu::Scratch s(n);
    EXPECT_TRUE(aligned64(s.data())) << n << " floats";
  }
  const std::vector<float> w(static_cast<size_t>(40) * 70, 0.5f);  // 40 outputs, n = 70
  const cpu::PackedMatrix p = cpu::pack_rows({&w}, 70);
  for (int i = 0; i < p.panels(); ++i) EXPECT_TRUE(aligned64(p.panel(i))) << "panel " << i;
}
