// Fixtures of the CPU-backend suites: the (backend, ISA) cases every backend-level test runs
// over, and deterministic random inputs.
#pragma once
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "optimized/cpu/cpu_backend.hpp"
#include "optimized/cpu/isa.hpp"
#include "reference/prng.hpp"
#include "verify/backends.hpp"

namespace akv::test {

/// A backend to test: "reference", or "cpu" with a pinned ISA.
struct BackendCase {
  std::string backend;
  std::string isa;  // "" for the reference
  std::string label() const { return isa.empty() ? backend : backend + "_" + isa; }
};

/// The reference and the cpu backend on every ISA it knows (unsupported ones are skipped).
inline std::vector<BackendCase> backend_cases() {
  std::vector<BackendCase> v{{"reference", ""}};
  for (cpu::Isa i : cpu::all_isas()) v.push_back({"cpu", cpu::isa_name(i)});
  return v;
}
inline std::vector<BackendCase> cpu_cases() {
  std::vector<BackendCase> v;
  for (cpu::Isa i : cpu::all_isas()) v.push_back({"cpu", cpu::isa_name(i)});
  return v;
}
inline std::string case_name(const ::testing::TestParamInfo<BackendCase>& i) { return i.param.label(); }
/// How GoogleTest prints the parameter (ctest's "GetParam() = ..."): the label, not raw bytes.
inline void PrintTo(const BackendCase& c, std::ostream* os) { *os << c.label(); }

/// GTEST_SKIPs (with the reason) when this CPU cannot run the case's ISA.
#define AKV_SKIP_UNSUPPORTED(c)                                                                  \
  do {                                                                                           \
    if (!(c).isa.empty() && !::akv::cpu::isa_supported(::akv::cpu::parse_isa((c).isa)))        \
      GTEST_SKIP() << "ISA " << (c).isa << " is not supported by this CPU: SKIPPED, not checked"; \
  } while (0)

inline std::unique_ptr<Backend> make(const BackendCase& c, std::shared_ptr<const Model> m, int threads = 0) {
  BackendOptions o;
  if (!c.isa.empty()) o.isa = c.isa;
  o.threads = threads;
  auto b = make_backend(c.backend, std::move(m), o);
  b->set_scratch_poison(std::numeric_limits<float>::quiet_NaN());
  return b;
}

/// The small model with weight seed 1, built once per process.
inline std::shared_ptr<const Model> small() {
  static auto m = make_model(config_by_name("small"), 1);
  return m;
}

/// Uniform floats in [lo, hi) from a fixed seed.
inline std::vector<float> randu(size_t n, uint64_t seed, float lo = -1.0f, float hi = 1.0f) {
  SplitMix64 g{seed * 0x9E3779B97F4A7C15ull + 7};
  std::vector<float> v(n);
  for (float& x : v) x = lo + (g.uniform() * 0.5f + 0.5f) * (hi - lo);
  return v;
}

/// Small integers in [-k, k] as floats: their products and sums are exact in any order.
inline std::vector<float> randi(size_t n, uint64_t seed, int k) {
  SplitMix64 g{seed * 0x9E3779B97F4A7C15ull + 11};
  std::vector<float> v(n);
  for (float& x : v) x = static_cast<float>(static_cast<int>(g.next() % (2 * k + 1)) - k);
  return v;
}

inline bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace akv::test
