// The AVX-512 intrinsics of kernels_avx512.cpp from SIMDe (Debian libsimde-dev), for the
// avx512_simde ISA (spec/kernels-cpu.md K13): the same kernel source, run on any x86-64.
// Included only by that TU when compiled with AKV_SIMDE (optimized/cpu/CMakeLists.txt).
//
// Three rules, each enforced here at compile time or by the K13 tests:
//  - No native AVX-512 (nor AVX/AVX2/FMA): the TU is built with -mno-avx512f and SIMDE_NO_NATIVE.
//  - Every fused op is fused. SIMDe 0.7.4's portable _mm512_fmadd_ps / _mm512_fnmadd_ps compute
//    (a*b)+c with two roundings (simde/x86/avx512/fmadd.h, fnmadd.h; under -ffp-contract=off
//    nothing fuses them), which is not K1's fma. They are replaced by std::fma per lane;
//    every other fused or approximate intrinsic fails the build until it is reviewed.
//  - Float-to-int conversion is the native one: round to nearest even, 0x80000000 out of range
//    (SIMDe 0.7.4 lacks _mm512_cvtps_epi32).
//  - What SIMDe 0.7.4 lacks otherwise is spelled with what it has, moving bits only:
//    _mm512_cmplt_epi32_mask(a, b) = cmpgt(b, a), _mm512_shuffle_f32x4 = shuffle_i32x4 on the
//    same bits, _MM_FROUND_NO_EXC = SIMDE_MM_FROUND_NO_EXC.
#pragma once

#if defined(__AVX512F__) || defined(__AVX__) || defined(__FMA__)
#error "the avx512_simde TU must be compiled for baseline x86-64, without native AVX/AVX-512/FMA"
#endif
#if !defined(SIMDE_NO_NATIVE)
#error "the avx512_simde TU must be compiled with -DSIMDE_NO_NATIVE"
#endif
#if defined(SIMDE_FAST_MATH) || defined(SIMDE_FAST_NANS) || defined(SIMDE_FAST_ROUND_MODE) || \
    defined(SIMDE_FAST_ROUND_TIES) || defined(SIMDE_FAST_CONVERSION_RANGE) || defined(SIMDE_FAST_EXCEPTIONS)
#error "SIMDe's fast-math shortcuts change bits: akv never enables them"
#endif

#define SIMDE_ENABLE_NATIVE_ALIASES
#include <simde/x86/avx512.h>

#if defined(SIMDE_X86_AVX512F_NATIVE) || defined(SIMDE_X86_AVX2_NATIVE) || defined(SIMDE_X86_FMA_NATIVE)
#error "SIMDe selected a native AVX-512/AVX2/FMA path: the avx512_simde ISA must be emulated"
#endif

#include <cmath>
#include <cstdint>

namespace akv::cpu::simde_exact {

// Lanes in and out through memory: plain C++, no SIMDe path that could round differently.
template <class F>
inline __m512 lanes3(__m512 a, __m512 b, __m512 c, F f) {
  alignas(64) float x[16], y[16], z[16];
  _mm512_storeu_ps(x, a);
  _mm512_storeu_ps(y, b);
  _mm512_storeu_ps(z, c);
  for (int l = 0; l < 16; ++l) x[l] = f(x[l], y[l], z[l]);
  return _mm512_loadu_ps(x);
}

/// a*b + c per lane, one rounding: the native _mm512_fmadd_ps.
inline __m512 fmadd(__m512 a, __m512 b, __m512 c) {
  return lanes3(a, b, c, [](float x, float y, float z) { return std::fma(x, y, z); });
}

/// -(a*b) + c per lane, one rounding: the native _mm512_fnmadd_ps (negation is exact).
inline __m512 fnmadd(__m512 a, __m512 b, __m512 c) {
  return lanes3(a, b, c, [](float x, float y, float z) { return std::fma(-x, y, z); });
}

/// The native _mm512_cvtps_epi32 under the default MXCSR: nearest even; NaN and values
/// outside [-2^31, 2^31) give 0x80000000 (the "integer indefinite").
inline __m512i cvtps_epi32(__m512 a) {
  alignas(64) float x[16];
  alignas(64) int32_t r[16];
  _mm512_storeu_ps(x, a);
  for (int l = 0; l < 16; ++l)
    r[l] = (x[l] >= -2147483648.0f && x[l] < 2147483648.0f) ? static_cast<int32_t>(std::nearbyint(x[l])) : INT32_MIN;
  return _mm512_loadu_si512(r);
}

// The byte widenings and int -> float conversion of the quantized panels (K15), absent from
// SIMDe 0.7.4: per lane, as the native instructions (the conversion is exact below 2^24).
template <class B>
inline __m512i widen_bytes(__m128i a) {
  alignas(16) B b[16];
  alignas(64) int32_t r[16];
  _mm_storeu_si128(reinterpret_cast<__m128i*>(b), a);
  for (int l = 0; l < 16; ++l) r[l] = b[l];
  return _mm512_loadu_si512(r);
}

inline __m512 cvtepi32_ps(__m512i a) {
  alignas(64) int32_t x[16];
  alignas(64) float r[16];
  _mm512_storeu_si512(x, a);
  for (int l = 0; l < 16; ++l) r[l] = static_cast<float>(x[l]);
  return _mm512_loadu_ps(r);
}

}  // namespace akv::cpu::simde_exact

#ifndef _MM_FROUND_NO_EXC
#define _MM_FROUND_NO_EXC SIMDE_MM_FROUND_NO_EXC
#endif
#ifndef _mm512_cmplt_epi32_mask
#define _mm512_cmplt_epi32_mask(a, b) _mm512_cmpgt_epi32_mask(b, a)
#endif
#ifndef _mm512_shuffle_f32x4
#define _mm512_shuffle_f32x4(a, b, imm) \
  _mm512_castsi512_ps(_mm512_shuffle_i32x4(_mm512_castps_si512(a), _mm512_castps_si512(b), imm))
#endif

#undef _mm512_fmadd_ps
#define _mm512_fmadd_ps(a, b, c) ::akv::cpu::simde_exact::fmadd(a, b, c)
#undef _mm512_fnmadd_ps
#define _mm512_fnmadd_ps(a, b, c) ::akv::cpu::simde_exact::fnmadd(a, b, c)
#ifndef _mm512_cvtepu8_epi32
#define _mm512_cvtepu8_epi32(a) ::akv::cpu::simde_exact::widen_bytes<uint8_t>(a)
#endif
#ifndef _mm512_cvtepi8_epi32
#define _mm512_cvtepi8_epi32(a) ::akv::cpu::simde_exact::widen_bytes<int8_t>(a)
#endif
#ifndef _mm512_cvtepi32_ps
#define _mm512_cvtepi32_ps(a) ::akv::cpu::simde_exact::cvtepi32_ps(a)
#endif
#undef _mm512_cvtps_epi32
#define _mm512_cvtps_epi32(a) ::akv::cpu::simde_exact::cvtps_epi32(a)

// Fused or approximate intrinsics not reviewed for this layer: using one fails the build.
// (The compiler names the undeclared identifier akv_simde_intrinsic_not_reviewed_<name>.)
#define AKV_SIMDE_UNREVIEWED(name) akv_simde_intrinsic_not_reviewed_##name
#undef _mm512_fmsub_ps
#define _mm512_fmsub_ps(...) AKV_SIMDE_UNREVIEWED(_mm512_fmsub_ps)
#undef _mm512_fnmsub_ps
#define _mm512_fnmsub_ps(...) AKV_SIMDE_UNREVIEWED(_mm512_fnmsub_ps)
#undef _mm512_fmaddsub_ps
#define _mm512_fmaddsub_ps(...) AKV_SIMDE_UNREVIEWED(_mm512_fmaddsub_ps)
#undef _mm512_mask_fmadd_ps
#define _mm512_mask_fmadd_ps(...) AKV_SIMDE_UNREVIEWED(_mm512_mask_fmadd_ps)
#undef _mm512_maskz_fmadd_ps
#define _mm512_maskz_fmadd_ps(...) AKV_SIMDE_UNREVIEWED(_mm512_maskz_fmadd_ps)
#undef _mm256_fmadd_ps
#define _mm256_fmadd_ps(...) AKV_SIMDE_UNREVIEWED(_mm256_fmadd_ps)
#undef _mm256_fnmadd_ps
#define _mm256_fnmadd_ps(...) AKV_SIMDE_UNREVIEWED(_mm256_fnmadd_ps)
#undef _mm_fmadd_ps
#define _mm_fmadd_ps(...) AKV_SIMDE_UNREVIEWED(_mm_fmadd_ps)
#undef _mm512_rcp14_ps
#define _mm512_rcp14_ps(...) AKV_SIMDE_UNREVIEWED(_mm512_rcp14_ps)
#undef _mm512_rsqrt14_ps
#define _mm512_rsqrt14_ps(...) AKV_SIMDE_UNREVIEWED(_mm512_rsqrt14_ps)
#undef _mm512_exp_ps
#define _mm512_exp_ps(...) AKV_SIMDE_UNREVIEWED(_mm512_exp_ps)
#undef _mm512_cvttps_epi32
#define _mm512_cvttps_epi32(...) AKV_SIMDE_UNREVIEWED(_mm512_cvttps_epi32)
