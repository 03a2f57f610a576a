// The AVX2+FMA kernels: 16 lanes as two 8-wide registers (lanes 0-7, 8-15). Selected at run
// time only on CPUs with AVX2, FMA and F16C (isa.cpp). Same bits as the portable table (K0).
#include <immintrin.h>

#include <algorithm>
#include <cmath>

#include "optimized/cpu/kernels.hpp"
#include "reference/exp.hpp"

// Everything below, and only that, is compiled for AVX2+FMA (+F16C for the binary16 cache rows, K16).
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma,f16c"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
#endif

#include "optimized/cpu/kernels_impl.hpp"

namespace akv::cpu {

namespace {

// akv::exp on 8 lanes (reference/exp.hpp), operation for operation; the special cases are
// selected by blends in the scalar code's priority order, computed only when a lane needs one.
__m256 exp8(__m256 x) {
  const __m256 k = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269502162933349609375f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(k, _mm256_set1_ps(0.693145751953125f), x);  // fma(-k, c, x): same exact value
  r = _mm256_fnmadd_ps(k, _mm256_set1_ps(1.428606765330187045e-06f), r);
  __m256 p = _mm256_set1_ps(1.98412698412698412698e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.38888888888888888889e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.33333333333333333333e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.16666666666666666667e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.66666666666666666667e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  const __m256i ki = _mm256_cvtps_epi32(k);  // k is integral: exact
  auto pow2i = [](__m256i e) { return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(e, _mm256_set1_epi32(127)), 23)); };
  __m256 y = _mm256_mul_ps(p, pow2i(ki));
  const __m256 is_big = _mm256_castsi256_ps(_mm256_cmpgt_epi32(ki, _mm256_set1_epi32(127)));
  const __m256 is_tiny = _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(-126), ki));
  if (!_mm256_testz_ps(_mm256_or_ps(is_big, is_tiny), _mm256_or_ps(is_big, is_tiny))) {  // rare; else y stays
    const __m256 big = _mm256_mul_ps(_mm256_mul_ps(p, pow2i(_mm256_set1_epi32(127))), pow2i(_mm256_sub_epi32(ki, _mm256_set1_epi32(127))));
    const __m256 tiny = _mm256_mul_ps(_mm256_mul_ps(p, pow2i(_mm256_add_epi32(ki, _mm256_set1_epi32(64)))), pow2i(_mm256_set1_epi32(-64)));
    y = _mm256_blendv_ps(y, big, is_big);
    y = _mm256_blendv_ps(y, tiny, is_tiny);
  }
  const __m256 is_zero = _mm256_cmp_ps(x, _mm256_set1_ps(-103.972084045410156f), _CMP_LT_OQ);
  const __m256 is_inf = _mm256_cmp_ps(x, _mm256_set1_ps(88.72283935546875f), _CMP_GT_OQ);
  const __m256 is_nan = _mm256_cmp_ps(x, x, _CMP_UNORD_Q);
  const __m256 any = _mm256_or_ps(_mm256_or_ps(is_zero, is_inf), is_nan);
  if (!_mm256_testz_ps(any, any)) {  // the special cases (rare), in the scalar code's priority order
    y = _mm256_blendv_ps(y, _mm256_setzero_ps(), is_zero);
    y = _mm256_blendv_ps(y, _mm256_set1_ps(INFINITY), is_inf);
    y = _mm256_blendv_ps(y, x, is_nan);
  }
  return y;
}

struct Avx2 {
  struct V {
    __m256 lo, hi;
  };
  static constexpr int kTileBudget = 6;  // 12 of the 16 ymm registers hold accumulators
  static V zero() { return {_mm256_setzero_ps(), _mm256_setzero_ps()}; }
  static V set1(float x) {
    const __m256 b = _mm256_set1_ps(x);
    return {b, b};
  }
  static V load(const float* p) { return {_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8)}; }
  static void store(float* p, V a) {
    _mm256_storeu_ps(p, a.lo);
    _mm256_storeu_ps(p + 8, a.hi);
  }
  static V fma(V a, V b, V c) { return {_mm256_fmadd_ps(a.lo, b.lo, c.lo), _mm256_fmadd_ps(a.hi, b.hi, c.hi)}; }
  static V add(V a, V b) { return {_mm256_add_ps(a.lo, b.lo), _mm256_add_ps(a.hi, b.hi)}; }
  static V sub(V a, V b) { return {_mm256_sub_ps(a.lo, b.lo), _mm256_sub_ps(a.hi, b.hi)}; }
  static V mul(V a, V b) { return {_mm256_mul_ps(a.lo, b.lo), _mm256_mul_ps(a.hi, b.hi)}; }
  static V div(V a, V b) { return {_mm256_div_ps(a.lo, b.lo), _mm256_div_ps(a.hi, b.hi)}; }
  static V exp(V a) { return {exp8(a.lo), exp8(a.hi)}; }
  static V select_lt(V x, V y, V a, V b) {
    return {_mm256_blendv_ps(b.lo, a.lo, _mm256_cmp_ps(x.lo, y.lo, _CMP_LT_OQ)),
            _mm256_blendv_ps(b.hi, a.hi, _mm256_cmp_ps(x.hi, y.hi, _CMP_LT_OQ))};
  }
  // Signed bytes to floats (exact: small integers), 8 lanes a half.
  static __m256 s8_half(const uint8_t* p) {
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
  }
  // Nibble s of each lane's 32-bit word, 8 words a half.
  static __m256 nibbles8(const uint8_t* p, int s) {
    const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    return _mm256_cvtepi32_ps(_mm256_and_si256(_mm256_srli_epi32(w, 4 * s), _mm256_set1_epi32(15)));
  }
  static V u4(const uint8_t* p, int s) { return {nibbles8(p, s), nibbles8(p + 32, s)}; }
  static V s8(const uint8_t* p) { return {s8_half(p), s8_half(p + 8)}; }
  // binary16 <-> float by F16C (K16): exact widening; narrowing to nearest even, as float_to_half_bits.
  static float half(uint16_t h) { return _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(h))); }
  static V f16(const uint8_t* p) {
    return {_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))),
            _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16)))};
  }
  static void to_f16(V a, uint8_t* p) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph(a.lo, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p + 16), _mm256_cvtps_ph(a.hi, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
  // The K2 tree: l += l+8 (lo + hi), l += l+4, l += l+2, l += l+1.
  static float reduce(V a) {
    const __m256 s8 = _mm256_add_ps(a.lo, a.hi);
    __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
    s4 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
    s4 = _mm_add_ss(s4, _mm_shuffle_ps(s4, s4, 1));
    return _mm_cvtss_f32(s4);
  }
  // Eight K2 trees at once, each the adds of reduce() on the same operands in the same order,
  // packed across keys: key c's tree is worked in lane c (mod 4) of a 128-bit half.
  static void reduce8(const V* a, float* out) {
    __m256 s8[8];  // w = 8: lanes 0-7 of key c
    for (int c = 0; c < 8; ++c) s8[c] = _mm256_add_ps(a[c].lo, a[c].hi);
    __m256 u[4];  // w = 4: [key c lanes 0-3 | key c+4 lanes 0-3]
    for (int c = 0; c < 4; ++c)
      u[c] = _mm256_add_ps(_mm256_permute2f128_ps(s8[c], s8[c + 4], 0x20), _mm256_permute2f128_ps(s8[c], s8[c + 4], 0x31));
    __m256 w[2];  // w = 2: [keys c, c+1 lanes 0-1 | keys c+4, c+5 lanes 0-1]
    for (int c = 0; c < 2; ++c)
      w[c] = _mm256_add_ps(_mm256_shuffle_ps(u[2 * c], u[2 * c + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                           _mm256_shuffle_ps(u[2 * c], u[2 * c + 1], _MM_SHUFFLE(3, 2, 3, 2)));
    // w = 1: [keys 0-3 | keys 4-7], lane 0 + lane 1 of each
    _mm256_storeu_ps(out, _mm256_add_ps(_mm256_shuffle_ps(w[0], w[1], _MM_SHUFFLE(2, 0, 2, 0)),
                                        _mm256_shuffle_ps(w[0], w[1], _MM_SHUFFLE(3, 1, 3, 1))));
  }
};

}  // namespace

const Kernels& kernels_avx2() {
  static const Kernels k = impl::table<Avx2>(Isa::kAvx2);
  return k;
}

}  // namespace akv::cpu

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
