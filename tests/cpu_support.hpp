// Fixtures of the CPU-backend suites: the cpu variant of an ISA, the small model, and
// deterministic random inputs.
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
#include "harness_support.hpp"
#include "verify/check/models.hpp"
#include "verify/check/variants.hpp"

namespace akv::test {

/// The cpu variant of `isa` at the default two threads (available or not).
inline check::Variant isa_variant(cpu::Isa isa) { return check::variant(std::string(cpu::isa_name(isa)) + "_t2"); }

/// The small model with weight seed 1, built once per process (the harness's).
inline std::shared_ptr<const Model> small() { return check::small_model(); }

/// Uniform floats in [lo, hi) from a fixed seed.
inline std::vector<float> randu(size_t n, uint64_t seed, float lo = -1.0f, float hi = 1.0f) {
  SplitMix64 g{seed * 0x9E3779B97F4A7C15ull + 7};
  std::vector<float> v(n);
  for (float& x : v) x = lo + (g.uniform() * 0.5f + 0.5f) * (hi - lo);
  return v;
}

}  // namespace akv::test
