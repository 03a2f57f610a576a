// A deterministic token stream for checks and benchmarks: the same tokens on every machine.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace akv {

/// n tokens over [0, vocab) from `seed` (a 32-bit LCG, Numerical Recipes' constants; bits 8+
/// of the state). vocab >= 1. Used by verify/check (invariance inputs) and the benchmarks.
template <class Tok>
std::vector<Tok> lcg_tokens(size_t n, uint32_t seed, int vocab) {
  std::vector<Tok> t(n);
  uint32_t x = seed * 2654435761u + 1;
  for (auto& v : t) {
    x = x * 1664525u + 1013904223u;
    v = static_cast<Tok>((x >> 8) % static_cast<uint32_t>(vocab));
  }
  return t;
}

}  // namespace akv
