// Storage the kernels stream rows from is 64-byte aligned (spec/kernels-cpu.md K15, "Where it
// is dequantized"): the packed panels, the cpu backend's scratch and the KV cache rows. No bit
// depends on it; speed does: a 64-byte load that straddles two cache lines cost the prefill
// matmul 13-16% (docs/performance.md). glibc hands out large blocks 16 bytes past a page, so a
// plain std::vector<float> of a long cache fails these checks.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
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

// The cache keeps every layer's K and V in one block (reference/kv_cache.hpp): up to the
// model's max_ctx (tiny: 16384) its slots spread out in place as it grows, past it they move to
// a new block. Each entry keeps its bytes across both, a new entry reads as zero even where a
// truncated one was, and a block of 4 MiB or more sits on 2 MiB (huge pages).
TEST(K15_Storage, CacheRowsKeepTheirBytesWhenTheBlockMoves) {
  const auto m = test::tiny();
  for (KvType t : {KvType::kF32, KvType::kF16}) {
    KVCache c(m->config, t);
    const size_t rb = c.row_bytes();
    auto byte = [&](int l, int kv, size_t p, size_t i) { return static_cast<unsigned char>((l * 131 + kv * 71 + p * 29 + i * 7) % 251 + 1); };
    auto rows = [&](int l, int kv) { return kv == 0 ? c.k_bytes(l) : c.v_bytes(l); };
    size_t filled = 0;
    for (size_t add : {size_t{1}, size_t{7}, size_t{200}, size_t{5000}, size_t{60000}}) {
      c.grow(add);
      for (int l = 0; l < c.n_layers(); ++l)
        for (int kv = 0; kv < 2; ++kv) {
          const unsigned char* r = rows(l, kv);
          ASSERT_TRUE(aligned64(r)) << kv_type_name(t) << " layer " << l << " at " << c.size();
          for (size_t p = 0; p < c.size(); ++p)
            for (size_t i = 0; i < rb; ++i)
              ASSERT_EQ(r[p * rb + i], p < filled ? byte(l, kv, p, i) : 0) << kv_type_name(t) << " layer " << l << " entry " << p;
          for (size_t p = filled; p < c.size(); ++p)
            for (size_t i = 0; i < rb; ++i) rows(l, kv)[p * rb + i] = byte(l, kv, p, i);
        }
      filled = c.size();
    }
    ASSERT_GE(2 * static_cast<size_t>(c.n_layers()) * c.size() * rb, size_t{4} << 20);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(c.k_bytes(0)) % (size_t{2} << 20), 0u) << kv_type_name(t);
    c.truncate(3);
    c.grow(10);
    for (int l = 0; l < c.n_layers(); ++l)
      for (int kv = 0; kv < 2; ++kv)
        for (size_t p = 0; p < c.size(); ++p)
          for (size_t i = 0; i < rb; ++i)
            ASSERT_EQ(rows(l, kv)[p * rb + i], p < 3 ? byte(l, kv, p, i) : 0) << kv_type_name(t) << " after truncate, entry " << p;
  }
}

// A model's panels come from one PanelArena (optimized/cpu/cpu_backend.cpp): each matrix
// 64-byte aligned, none overlapping the next, its bytes those of the same matrix packed on its
// own, and alive after the arena itself is gone.
TEST(K15_Storage, PanelsFromAnArenaAreTheSamePanels) {
  std::vector<cpu::PackedMatrix> from_arena, alone;
  {
    cpu::PanelArena arena;
    for (int i = 0; i < 6; ++i) {
      const int d = i == 3 ? 8000 : 40 + 16 * i, n = 70 + i;  // odd sizes, one of 2.3 MB
      std::vector<float> w(static_cast<size_t>(d) * n);
      for (size_t j = 0; j < w.size(); ++j) w[j] = static_cast<float>((j * 37 + i) % 101) - 50.0f;
      from_arena.push_back(cpu::pack_rows({&w}, n, &arena));
      alone.push_back(cpu::pack_rows({&w}, n));
    }
  }
  for (size_t i = 0; i < from_arena.size(); ++i) {
    const cpu::PackedMatrix& a = from_arena[i];
    const size_t bytes = static_cast<size_t>(a.panels()) * a.panel_bytes();
    EXPECT_TRUE(aligned64(a.data.get())) << "matrix " << i;
    EXPECT_EQ(std::memcmp(a.data.get(), alone[i].data.get(), bytes), 0) << "matrix " << i;
    for (size_t j = 0; j < from_arena.size(); ++j) {
      if (j == i) continue;
      const auto* b = reinterpret_cast<const unsigned char*>(from_arena[j].data.get());
      const auto* p = reinterpret_cast<const unsigned char*>(a.data.get());
      EXPECT_TRUE(b >= p + bytes || b + static_cast<size_t>(from_arena[j].panels()) * from_arena[j].panel_bytes() <= p)
          << "matrices " << i << " and " << j << " overlap";
    }
  }
}
