// The AVX-512F kernels: 16 lanes as one 16-wide register. Selected at run time only on CPUs
// with AVX-512F (isa.cpp). Same bits as the portable table (K0).
// Compiled a second time with AKV_SIMDE (CMakeLists.txt): the same source against SIMDe's
// portable AVX-512, without native AVX-512, as the avx512_simde ISA that runs on any x86-64
// (spec/kernels-cpu.md K13); and a third time with AKV_MUTANT_CONTRACT_ROPE for the test of
// K13 that shows the emulated build catches one contracted FMA in the RoPE.
#if defined(AKV_SIMDE)
#include "optimized/cpu/simde_avx512.hpp"
#else
#include <immintrin.h>
#endif

#include <algorithm>
#include <cmath>

#include "optimized/cpu/kernels.hpp"
#include "reference/exp.hpp"

// Everything below, and only that, is compiled for AVX-512F (+FMA, AVX2 for the 256-bit tail).
#if defined(AKV_SIMDE)
// No target change: baseline x86-64 (K13).
#elif defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx2,fma"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx2,fma")
#endif

#include "optimized/cpu/kernels_impl.hpp"

namespace akv::cpu {

namespace {

// akv::exp on 16 lanes (reference/exp.hpp), operation for operation, as exp8 in kernels_avx2.cpp.
__m512 exp16(__m512 x) {
  const __m512 k = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269502162933349609375f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(k, _mm512_set1_ps(0.693145751953125f), x);
  r = _mm512_fnmadd_ps(k, _mm512_set1_ps(1.428606765330187045e-06f), r);
  __m512 p = _mm512_set1_ps(1.98412698412698412698e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.38888888888888888889e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.33333333333333333333e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.16666666666666666667e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.66666666666666666667e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  const __m512i ki = _mm512_cvtps_epi32(k);
  auto pow2i = [](__m512i e) { return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(e, _mm512_set1_epi32(127)), 23)); };
  __m512 y = _mm512_mul_ps(p, pow2i(ki));
  const auto is_big = _mm512_cmpgt_epi32_mask(ki, _mm512_set1_epi32(127));
  const auto is_tiny = _mm512_cmplt_epi32_mask(ki, _mm512_set1_epi32(-126));
  if (is_big | is_tiny) {  // 2^k outside the normal range (rare): scaled in two steps; else y stays
    const __m512 big = _mm512_mul_ps(_mm512_mul_ps(p, pow2i(_mm512_set1_epi32(127))), pow2i(_mm512_sub_epi32(ki, _mm512_set1_epi32(127))));
    const __m512 tiny = _mm512_mul_ps(_mm512_mul_ps(p, pow2i(_mm512_add_epi32(ki, _mm512_set1_epi32(64)))), pow2i(_mm512_set1_epi32(-64)));
    y = _mm512_mask_blend_ps(is_big, y, big);
    y = _mm512_mask_blend_ps(is_tiny, y, tiny);
  }
  const auto is_zero = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-103.972084045410156f), _CMP_LT_OQ);
  const auto is_inf = _mm512_cmp_ps_mask(x, _mm512_set1_ps(88.72283935546875f), _CMP_GT_OQ);
  const auto is_nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
  if (is_zero | is_inf | is_nan) {  // the special cases (rare), in the scalar code's priority order
    y = _mm512_mask_blend_ps(is_zero, y, _mm512_setzero_ps());
    y = _mm512_mask_blend_ps(is_inf, y, _mm512_set1_ps(INFINITY));
    y = _mm512_mask_blend_ps(is_nan, y, x);
  }
  return y;
}

struct Avx512 {
#if defined(AKV_MUTANT_CONTRACT_ROPE)
  static constexpr bool kMutantContractRope = true;  // the K13 teeth test's mutant, never in akv_cpu
#endif
  using V = __m512;
  static constexpr int kTileBudget = 24;  // 24 of the 32 zmm registers hold accumulators
  static V zero() { return _mm512_setzero_ps(); }
  static V set1(float x) { return _mm512_set1_ps(x); }
  static V load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, V a) { _mm512_storeu_ps(p, a); }
  static V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static V add(V a, V b) { return _mm512_add_ps(a, b); }
  static V sub(V a, V b) { return _mm512_sub_ps(a, b); }
  static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
  static V div(V a, V b) { return _mm512_div_ps(a, b); }
  static V exp(V a) { return exp16(a); }
  static V select_lt(V x, V y, V a, V b) { return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, y, _CMP_LT_OQ), b, a); }
  // Quants to floats (exact: small integers).
  // Nibble s of each lane's word, as float: the shifted word indexes a table of 0..15 (vpermps
  // reads an index's low 4 bits), one op where mask-and-convert takes two.
  static V u4(const uint8_t* p, int s) {
    const __m512i w = _mm512_srli_epi32(_mm512_loadu_si512(p), static_cast<unsigned>(4 * s));
    return _mm512_permutexvar_ps(w, _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
  }
  static V s8(const uint8_t* p) {
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
  }
  // binary16 <-> float (K16): exact widening; narrowing to nearest even, as float_to_half_bits.
#if defined(AKV_SIMDE)
  static float half(uint16_t h) { return half_bits_to_float(h); }
  static V f16(const uint8_t* p) {  // per lane, the reference's conversion (K13: no unreviewed intrinsic)
    alignas(64) float x[16];
    for (int l = 0; l < 16; ++l) x[l] = half_bits_to_float(static_cast<uint16_t>(p[2 * l] | (p[2 * l + 1] << 8)));
    return _mm512_loadu_ps(x);
  }
  static void to_f16(V a, uint8_t* p) {
    alignas(64) float x[16];
    _mm512_storeu_ps(x, a);
    for (int l = 0; l < 16; ++l) {
      const uint16_t h = float_to_half_bits(x[l]);
      p[2 * l] = static_cast<uint8_t>(h & 0xff), p[2 * l + 1] = static_cast<uint8_t>(h >> 8);
    }
  }
#else
  static float half(uint16_t h) {  // one value through the 16-lane widening (AVX-512F has no scalar form)
    return _mm512_cvtss_f32(_mm512_cvtph_ps(_mm256_zextsi128_si256(_mm_cvtsi32_si128(h))));
  }
  static V f16(const uint8_t* p) { return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
  static void to_f16(V a, uint8_t* p) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtps_ph(a, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
#endif
  // The K2 tree: l += l+8 (low 256 + high 256), l += l+4, l += l+2, l += l+1.
  static float reduce(V a) {
    const __m256 lo = _mm512_castps512_ps256(a);
    const __m256 hi = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(a), 1));
    const __m256 s8 = _mm256_add_ps(lo, hi);
    __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
    s4 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
    s4 = _mm_add_ss(s4, _mm_shuffle_ps(s4, s4, 1));
    return _mm_cvtss_f32(s4);
  }
  // Eight K2 trees at once, each the adds of reduce() on the same operands in the same order
  // (lower lane first), packed across keys into shared registers.
  static void reduce8(const V* a, float* out) {
    __m512 s8[4];  // w = 8: [key c lanes 0-7 | key c+4 lanes 0-7]
    for (int c = 0; c < 4; ++c)
      s8[c] = _mm512_add_ps(_mm512_shuffle_f32x4(a[c], a[c + 4], 0x44), _mm512_shuffle_f32x4(a[c], a[c + 4], 0xEE));
    __m512 u[2];  // w = 4: 128-bit blocks [key c, key c+4, key c+1, key c+5] lanes 0-3, c = 0, 2
    for (int c = 0; c < 2; ++c)
      u[c] = _mm512_add_ps(_mm512_shuffle_f32x4(s8[2 * c], s8[2 * c + 1], 0x88),
                           _mm512_shuffle_f32x4(s8[2 * c], s8[2 * c + 1], 0xDD));
    // w = 2: blocks [keys 0, 2 | 4, 6 | 1, 3 | 5, 7] lanes 0-1 each
    const __m512 w = _mm512_add_ps(_mm512_shuffle_ps(u[0], u[1], _MM_SHUFFLE(1, 0, 1, 0)),
                                   _mm512_shuffle_ps(u[0], u[1], _MM_SHUFFLE(3, 2, 3, 2)));
    // w = 1: blocks [k0 k2 k0 k2 | k4 k6 k4 k6 | k1 k3 k1 k3 | k5 k7 k5 k7]
    const __m512 r = _mm512_add_ps(_mm512_shuffle_ps(w, w, _MM_SHUFFLE(2, 0, 2, 0)), _mm512_shuffle_ps(w, w, _MM_SHUFFLE(3, 1, 3, 1)));
    const __m512i order = _mm512_setr_epi32(0, 8, 1, 9, 4, 12, 5, 13, 0, 0, 0, 0, 0, 0, 0, 0);
    _mm256_storeu_ps(out, _mm512_castps512_ps256(_mm512_permutexvar_ps(order, r)));
  }
};

}  // namespace

#if !defined(AKV_KERNELS_AVX512_TABLE)  // the native build
#define AKV_KERNELS_AVX512_TABLE kernels_avx512
#define AKV_KERNELS_AVX512_ISA Isa::kAvx512
#endif

const Kernels& AKV_KERNELS_AVX512_TABLE() {
  static const Kernels k = impl::table<Avx512>(AKV_KERNELS_AVX512_ISA);
  return k;
}

}  // namespace akv::cpu

#if defined(AKV_SIMDE)
#elif defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
