// The PRNG that defines the synthetic weights bit-for-bit (spec/model.md M3).
#pragma once
#include <cstdint>

namespace akv {

/// SplitMix64 (Steele, Lea, Flood, "Fast splittable pseudorandom number generators",
/// OOPSLA 2014): state += 0x9E3779B97F4A7C15, then the 64-bit finaliser.
struct SplitMix64 {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  /// A float in [-1, 1) with 24 random bits, exact: (top 24 bits - 2^23) * 2^-23.
  float uniform() {
    const int32_t u = static_cast<int32_t>(next() >> 40);  // [0, 2^24)
    return static_cast<float>(u - (1 << 23)) * 0x1p-23f;
  }
};

/// The stream of tensor `tensor_id` under weight seed `seed` (M3): independent per tensor,
/// so adding a tensor never shifts another tensor's values.
inline SplitMix64 tensor_stream(uint64_t seed, uint64_t tensor_id) {
  SplitMix64 mix{seed ^ (0x9E3779B97F4A7C15ull * (tensor_id + 1))};
  return SplitMix64{mix.next()};
}

}  // namespace akv
