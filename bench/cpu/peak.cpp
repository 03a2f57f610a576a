#include "bench/cpu/peak.hpp"

#include <immintrin.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace akv::bench {

namespace {
// 12 independent chains hide the FMA latency on two pipes; the result feeds a sink so the
// loop is not removed.
__attribute__((target("avx2,fma"))) double run_avx2(long iters) {
  __m256 a[12];
  for (int i = 0; i < 12; ++i) a[i] = _mm256_set1_ps(1.0f + i * 1e-3f);
  const __m256 b = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-7f);
  for (long it = 0; it < iters; ++it)
    for (int i = 0; i < 12; ++i) a[i] = _mm256_fmadd_ps(a[i], b, c);
  float s = 0;
  for (int i = 0; i < 12; ++i) s += _mm256_cvtss_f32(a[i]);
  return s + static_cast<double>(iters) * 12 * 8 * 2;  // flops
}
__attribute__((target("avx512f"))) double run_avx512(long iters) {
  __m512 a[16];
  for (int i = 0; i < 16; ++i) a[i] = _mm512_set1_ps(1.0f + i * 1e-3f);
  const __m512 b = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-7f);
  for (long it = 0; it < iters; ++it)
    for (int i = 0; i < 16; ++i) a[i] = _mm512_fmadd_ps(a[i], b, c);
  float s = 0;
  for (int i = 0; i < 16; ++i) s += _mm512_cvtss_f32(a[i]);
  return s + static_cast<double>(iters) * 16 * 16 * 2;
}
}  // namespace

double fma_peak_gflops(cpu::Isa isa, int threads) {
  const long iters = 40'000'000;
  std::vector<std::thread> ts;
  std::atomic<double> flops{0};
  const auto t0 = std::chrono::steady_clock::now();
  for (int t = 0; t < threads; ++t)
    ts.emplace_back([&] {
      const double f = isa == cpu::Isa::kAvx512 ? run_avx512(iters) : run_avx2(iters);
      double cur = flops.load();
      while (!flops.compare_exchange_weak(cur, cur + f)) {
      }
    });
  for (auto& t : ts) t.join();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return flops.load() / s / 1e9;
}

}  // namespace akv::bench
