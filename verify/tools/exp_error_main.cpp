// akv_exp_error [--threads N] [--step S]: the exhaustive error measurement of akv::exp
// (spec/bounds.md B0). Scans every float32 bit pattern (or every S-th), x <= 0 (the softmax
// domain) and x > 0 (reached by SiLU's exp(-a) for a < 0) separately, confirms each maximum
// with MPFR and prints it. Exit 0 when the maximum is within kExpUlp, 1 otherwise.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "verify/bounds/exp_error.hpp"

using akv::bounds::ExpScan;

namespace {
ExpScan scan_parallel(uint64_t first, uint64_t last, uint64_t step, int threads) {
  // Thread t takes the contiguous slice t of [first, last), aligned to `step`.
  const uint64_t n = (last - first + step - 1) / step;
  std::vector<ExpScan> parts(threads);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    const uint64_t a = first + (n * t / threads) * step, b = first + (n * (t + 1) / threads) * step;
    pool.emplace_back([&parts, t, a, b, step] { parts[t] = akv::bounds::scan_exp_error(a, b, step); });
  }
  for (auto& th : pool) th.join();
  ExpScan s;
  for (const auto& p : parts) {
    s.inputs += p.inputs;
    s.over_half += p.over_half;
    if (p.max_ulp > s.max_ulp) {
      s.max_ulp = p.max_ulp;
      s.where = p.where;
    }
  }
  return s;
}

void print(const char* domain, const ExpScan& s) {
  const double exact = akv::bounds::exp_ulp_error_mpfr(s.where);
  std::printf("%-28s inputs %11llu  max %.6f ulp (MPFR) at x = %a (%.9g)  not correctly rounded: %llu\n",
              domain, static_cast<unsigned long long>(s.inputs), exact, static_cast<double>(s.where),
              static_cast<double>(s.where), static_cast<unsigned long long>(s.over_half));
}
}  // namespace

int main(int argc, char** argv) {
  int threads = 2;
  uint64_t step = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--threads" && i + 1 < argc) threads = std::atoi(argv[++i]);
    else if (a == "--step" && i + 1 < argc) step = std::strtoull(argv[++i], nullptr, 10);
    else {
      std::fprintf(stderr, "usage: akv_exp_error [--threads N] [--step S]\n");
      return 2;
    }
  }
  if (threads < 1 || step < 1) {
    std::fprintf(stderr, "akv_exp_error: --threads and --step must be >= 1\n");
    return 2;
  }
  const auto t0 = std::chrono::steady_clock::now();
  const ExpScan pos = scan_parallel(0, 0x80000000ull, step, threads);           // +0 .. +NaN
  const ExpScan neg = scan_parallel(0x80000000ull, 0x100000000ull, step, threads);  // -0 .. -NaN
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("akv::exp against e^x, every %llu-th float32 bit pattern, %.1f s\n",
              static_cast<unsigned long long>(step), secs);
  print("x <= 0 (softmax, SiLU a>=0)", neg);
  print("x >= 0 (SiLU a<=0)", pos);
  // The fast oracle is within 2^-28 ulp of MPFR, so the true maximum is at most this.
  const double worst = std::max({akv::bounds::exp_ulp_error_mpfr(neg.where), akv::bounds::exp_ulp_error_mpfr(pos.where),
                                 neg.max_ulp + 0x1p-27, pos.max_ulp + 0x1p-27});
  std::printf("max over all (with the fast oracle's 2^-27 margin) %.6f; bound kExpUlp = %.4f: %s\n", worst, akv::bounds::kExpUlp, worst <= akv::bounds::kExpUlp ? "holds" : "VIOLATED");
  return worst <= akv::bounds::kExpUlp ? 0 : 1;
}
