// The portable kernels: 16 lanes as a plain array, std::fma per lane. Same operations in the
// same order as the AVX2 and AVX-512 tables, hence the same bits (spec/kernels-cpu.md K0).
#include <cmath>

#include "optimized/cpu/kernels_impl.hpp"

namespace akv::cpu {

namespace {
struct Portable {
  struct V {
    float v[kLanes];
  };
  static constexpr int kTileBudget = 1;
  template <class F>
  static V map(F f) {
    V r;
    for (int l = 0; l < kLanes; ++l) r.v[l] = f(l);
    return r;
  }
  static V zero() { return map([](int) { return 0.0f; }); }
  static V set1(float x) { return map([&](int) { return x; }); }
  static V load(const float* p) { return map([&](int l) { return p[l]; }); }
  static void store(float* p, const V& a) {
    for (int l = 0; l < kLanes; ++l) p[l] = a.v[l];
  }
  static V fma(const V& a, const V& b, const V& c) { return map([&](int l) { return std::fma(a.v[l], b.v[l], c.v[l]); }); }
  static V add(const V& a, const V& b) { return map([&](int l) { return a.v[l] + b.v[l]; }); }
  static V sub(const V& a, const V& b) { return map([&](int l) { return a.v[l] - b.v[l]; }); }
  static V mul(const V& a, const V& b) { return map([&](int l) { return a.v[l] * b.v[l]; }); }
  static V div(const V& a, const V& b) { return map([&](int l) { return a.v[l] / b.v[l]; }); }
  static V exp(const V& a) { return map([&](int l) { return akv::exp(a.v[l]); }); }
  static V select_lt(const V& x, const V& y, const V& a, const V& b) {
    return map([&](int l) { return x.v[l] < y.v[l] ? a.v[l] : b.v[l]; });
  }
  static V u4(const uint8_t* p, int s) {
    return map([&](int l) {
      const uint32_t w = static_cast<uint32_t>(p[4 * l]) | static_cast<uint32_t>(p[4 * l + 1]) << 8 |
                         static_cast<uint32_t>(p[4 * l + 2]) << 16 | static_cast<uint32_t>(p[4 * l + 3]) << 24;
      return static_cast<float>((w >> (4 * s)) & 15);
    });
  }
  static V s8(const uint8_t* p) { return map([&](int l) { return static_cast<float>(static_cast<int8_t>(p[l])); }); }
  static float half(uint16_t h) { return half_bits_to_float(h); }
  static V f16(const uint8_t* p) {
    return map([&](int l) { return half_bits_to_float(static_cast<uint16_t>(p[2 * l] | (p[2 * l + 1] << 8))); });
  }
  static void to_f16(const V& a, uint8_t* p) {
    for (int l = 0; l < kLanes; ++l) {
      const uint16_t h = float_to_half_bits(a.v[l]);
      p[2 * l] = static_cast<uint8_t>(h & 0xff), p[2 * l + 1] = static_cast<uint8_t>(h >> 8);
    }
  }
  static float reduce(V a) {
    for (int w = kLanes / 2; w >= 1; w /= 2)
      for (int l = 0; l < w; ++l) a.v[l] = a.v[l] + a.v[l + w];
    return a.v[0];
  }
  static void reduce8(const V* a, float* out) {
    for (int c = 0; c < 8; ++c) out[c] = reduce(a[c]);
  }
};
}  // namespace

const Kernels& kernels_portable() {
  static const Kernels k = impl::table<Portable>(Isa::kPortable);
  return k;
}

}  // namespace akv::cpu
