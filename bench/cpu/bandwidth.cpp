#include "bench/cpu/bandwidth.hpp"

#include <algorithm>
#include <memory>
#include <thread>
#include <vector>

#include "bench/cpu/common.hpp"

namespace akv::bench {

namespace {
// Runs f(first, last, thread) on `threads` threads over [0, n) in contiguous slices, and waits.
template <class F>
void parallel(int threads, size_t n, F&& f) {
  std::vector<std::thread> t;
  for (int i = 0; i < threads; ++i)
    t.emplace_back([&, i] { f(n * i / threads, n * (i + 1) / threads, i); });
  for (auto& x : t) x.join();
}
}  // namespace

Bandwidth memory_bandwidth(int threads, size_t array_mib, int runs) {
  const size_t n = (array_mib << 20) / sizeof(double);
  std::unique_ptr<double[]> a(new double[n]), b(new double[n]), c(new double[n]);
  parallel(threads, n, [&](size_t f, size_t l, int) {  // first touch by the thread that sweeps the slice
    for (size_t i = f; i < l; ++i) a[i] = 1.0, b[i] = 2.0, c[i] = 0.5;
  });
  Bandwidth bw;
  bw.array_bytes = n * sizeof(double);
  const double s = 3.0;
  std::vector<double> sums(static_cast<size_t>(threads));
  for (int r = 0; r <= runs; ++r) {  // run 0: warm-up
    auto t0 = Clock::now();
    parallel(threads, n, [&](size_t f, size_t l, int) {
      double* __restrict pa = a.get();
      const double* __restrict pb = b.get();
      const double* __restrict pc = c.get();
      for (size_t i = f; i < l; ++i) pa[i] = pb[i] + s * pc[i];
    });
    const double triad = secs(t0);
    t0 = Clock::now();
    parallel(threads, n, [&](size_t f, size_t l, int th) {
      double s0 = 0, s1 = 0, s2 = 0, s3 = 0;  // independent chains: the adds never wait on each other
      const double* __restrict p = a.get();
      size_t i = f;
      for (; i + 4 <= l; i += 4) s0 += p[i], s1 += p[i + 1], s2 += p[i + 2], s3 += p[i + 3];
      for (; i < l; ++i) s0 += p[i];
      sums[static_cast<size_t>(th)] = (s0 + s1) + (s2 + s3);
    });
    const double read = secs(t0);
    if (r == 0) continue;
    bw.triad_gbs = std::max(bw.triad_gbs, 3.0 * static_cast<double>(bw.array_bytes) / triad / 1e9);
    bw.read_gbs = std::max(bw.read_gbs, static_cast<double>(bw.array_bytes) / read / 1e9);
  }
  volatile double keep = 0;  // the sums are used: the read sweep cannot be optimised away
  for (double x : sums) keep = keep + x;
  (void)keep;
  return bw;
}

}  // namespace akv::bench
