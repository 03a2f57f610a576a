// The cpu kernels of one ISA as a table of the kernel ABI (include/akv/kernels.h, spec/gate.md
// GT1): what the gate checks and the composed forward runs (GT7). The cpu backend keeps its
// fused forward (cpu_backend.cpp) for speed; GT8 says why it equals the composed one over this
// table, and a test checks it bitwise.
#pragma once
#include <akv/kernels.h>

#include <memory>

#include "optimized/cpu/isa.hpp"
#include "optimized/cpu/thread_pool.hpp"

namespace akv::cpu {

struct Kernels;

/// An akv_kernels table over kernels_for(isa), owning its thread pool. Provides every op but
/// evict. matmul: prepare_weight packs W into panels (K1), split across threads by whole
/// panels; attention: (block of up to 16 rows, KV head) items (K4), split by whole items (K8),
/// and one decode token past the first key block at 2+ threads split over key blocks, as the
/// fused forward splits it (K4 "split over key blocks"); set_threads(n) rebuilds the pool (n in
/// [1, kMaxThreads], else returns 1).
class CpuKernelTable {
 public:
  /// Error(kBackendUnavailable) when this CPU lacks `isa`; threads as ThreadPool.
  CpuKernelTable(Isa isa, int threads);
  const akv_kernels* table() const { return &t_; }

 private:
  friend struct CpuTableOps;
  std::string name_;
  const Kernels* k_;
  std::unique_ptr<ThreadPool> pool_;
  akv_kernels t_{};
};

}  // namespace akv::cpu
