// Typed cache rows for the kernels (spec/state.md S5-S8, spec/kernels-cpu.md K16), written once
// over the 16-lane SIMD type S of kernels_impl.hpp, which includes this file. Three more S members:
//   S::f16(p)        32 bytes, 16 little-endian binary16 values -> 16 floats (exact: half_bits_to_float per lane)
//   S::half(h)       one binary16 value -> float, the same widening (q8_0's block scale)
//   S::to_f16(v, p)  16 floats -> 32 bytes of binary16, round to nearest even (float_to_half_bits per lane)
// Attention reads a typed row as float32 converted exactly, then runs K2/K4 on those values: the
// bits are those of the f32 kernel on the converted rows, on every ISA.
#pragma once
#include <algorithm>
#include <cstring>
#include <memory>

#include "optimized/cpu/kernels.hpp"
#include "reference/kv_types.hpp"
#include "reference/stored_weights.hpp"

namespace akv::cpu::impl {

// A thread's buffer `slot` of at least n floats, 64-byte aligned, contents unspecified. One per
// S (each ISA's TU its own symbol: no TU runs another's code), per thread, kept between calls.
template <class S>
float* kv_scratch(int slot, size_t n) {
  struct Buf {
    std::unique_ptr<float[], FreeDeleter> p;
    size_t n = 0;
  };
  thread_local Buf bufs[2];
  Buf& b = bufs[slot];
  if (b.n < n) {
    b.p = aligned_panel_storage(n * sizeof(float));
    b.n = n;
  }
  return b.p.get();
}

// One Q8_0 block (32 values) of a stored row as float32: float(q) * float(d), exact (S8). d is
// widened by S::half: the reference's function called out of line once a block bounded q8_0's
// decode (docs/performance.md), and the hardware's widening differs from it only on a signalling
// NaN, which S7 never stores (its d goes through float_to_half_bits, which quietens).
template <class S>
inline void q8_0_block(const uint8_t* blk, float* out) {
  uint16_t h;
  std::memcpy(&h, blk, 2);
  const typename S::V d = S::set1(S::half(h));
  S::store(out, S::mul(S::s8(blk + 2), d));
  S::store(out + kLanes, S::mul(S::s8(blk + 2 + kLanes), d));
}

// Row `r` of a typed cache (hd values from `row`, kv type t) as float32 into out (hd,). S8.
template <class S>
inline void kv_row_to_float(KvType t, const uint8_t* row, int hd, float* out) {
  if (t == KvType::kF16) {
    int i = 0;
    for (; i + kLanes <= hd; i += kLanes) S::store(out + i, S::f16(row + 2 * i));
    for (; i < hd; ++i) {
      uint16_t x;
      std::memcpy(&x, row + 2 * i, 2);
      out[i] = half_bits_to_float(x);
    }
  } else {  // q8_0: hd is a multiple of 32 (check_kv_type)
    for (int b = 0; b < hd / kKvQ8Block; ++b) q8_0_block<S>(row + b * kKvQ8BlockBytes, out + b * kKvQ8Block);
  }
}

// nb rows of head_dim 16*C from base (row_bytes apart) as float32 into out (nb, 16*C): the loop
// of kv_row_to_float with every bound a constant (the head dims of kAttentionPathHeadDims).
template <class S, int C>
void kv_rows_to_float(KvType t, const uint8_t* base, size_t row_bytes, int nb, float* out) {
  constexpr int hd = C * kLanes;
  if (t == KvType::kF16) {
    for (int p = 0; p < nb; ++p, base += row_bytes, out += hd)
      for (int c = 0; c < C; ++c) S::store(out + c * kLanes, S::f16(base + 2 * c * kLanes));
  } else {
    for (int p = 0; p < nb; ++p, base += row_bytes, out += hd)
      for (int b = 0; b < hd / kKvQ8Block; ++b) q8_0_block<S>(base + b * kKvQ8BlockBytes, out + b * kKvQ8Block);
  }
}

// Rows [k0, k0 + nb) of item a's keys (values: kValues) as float32, row p at the result + p *
// stride: the cache's own rows for f32 (stride a.stride), else the typed rows converted into
// this thread's buffer (stride head_dim). The buffer is reused by the next call on the thread.
template <class S, bool kValues>
const float* kv_rows(const AttnArgs& a, int k0, int nb, int& stride) {
  if (a.kv == KvType::kF32) {
    stride = a.stride;
    return (kValues ? a.v : a.k) + static_cast<size_t>(k0) * a.stride;
  }
  const int hd = a.head_dim;
  stride = hd;
  float* out = kv_scratch<S>(kValues ? 1 : 0, static_cast<size_t>(std::max(nb, 1)) * hd);
  const uint8_t* base = (kValues ? a.vq : a.kq) + static_cast<size_t>(k0) * a.row_bytes;
  switch (hd) {
    case 32: kv_rows_to_float<S, 2>(a.kv, base, a.row_bytes, nb, out); break;
    case 64: kv_rows_to_float<S, 4>(a.kv, base, a.row_bytes, nb, out); break;
    case 128: kv_rows_to_float<S, 8>(a.kv, base, a.row_bytes, nb, out); break;
    default:
      for (int p = 0; p < nb; ++p) kv_row_to_float<S>(a.kv, base + static_cast<size_t>(p) * a.row_bytes, hd, out + static_cast<size_t>(p) * hd);
  }
  return out;
}

// Cache rows as attention reads them in place (S8, K16): lanes(p, c) is lane set c (values 16c ..
// 16c + 15) of row p as float32, converted in the register that takes it; both give S8's exact
// values, so a kernel over either performs the f32 kernel's operations on the same operands.
template <class S>
struct F32Rows {  // the cache's own float rows
  const uint8_t* base;
  size_t rb;  // bytes between rows
  typename S::V lanes(int p, int c) const {
    return S::load(reinterpret_cast<const float*>(base + static_cast<size_t>(p) * rb) + c * kLanes);
  }
};
template <class S>
struct F16Rows {  // binary16, widened by S::f16
  const uint8_t* base;
  size_t rb;
  typename S::V lanes(int p, int c) const { return S::f16(base + static_cast<size_t>(p) * rb + 2 * c * kLanes); }
};
// Rows [k0, k0 + nb) of item a's keys (values: kValues) as a row view: f(rows) runs on it. f32
// and f16 rows are read in place; q8_0's are converted into this thread's buffer first (kv_rows),
// since widening its per-block scale at every load measured slower than the one pass over the
// block (docs/performance.md).
template <class S, bool kValues, class F>
void with_row_view(const AttnArgs& a, int k0, int nb, const F& f) {
  if (a.kv == KvType::kF16) return f(F16Rows<S>{(kValues ? a.vq : a.kq) + static_cast<size_t>(k0) * a.row_bytes, a.row_bytes});
  int stride;
  const float* rows = kv_rows<S, kValues>(a, k0, nb, stride);
  f(F32Rows<S>{reinterpret_cast<const uint8_t*>(rows), static_cast<size_t>(stride) * sizeof(float)});
}

template <class S>
const float* key_rows(const AttnArgs& a, int k0, int nb, int& stride) {
  return kv_rows<S, false>(a, k0, nb, stride);
}
template <class S>
const float* value_rows(const AttnArgs& a, int k0, int nb, int& stride) {
  return kv_rows<S, true>(a, k0, nb, stride);
}

// A stored row of n values as float32 (S8): the conversion attention reads rows through.
template <class S>
void kv_decode(KvType t, const uint8_t* in, int n, float* out) {
  if (t == KvType::kF32) return kv_decode_row(t, in, n, out);
  kv_row_to_float<S>(t, in, n, out);
}

// A row x (n,) stored as type t into out (S6, S7): kv_encode_row's bytes. f16 by S::to_f16
// (round to nearest even, as float_to_half_bits); q8_0 by the reference's one block quantizer.
template <class S>
void kv_encode(KvType t, const float* x, int n, uint8_t* out) {
  if (t != KvType::kF16) return kv_encode_row(t, x, n, out);
  int i = 0;
  for (; i + kLanes <= n; i += kLanes) S::to_f16(S::load(x + i), out + 2 * i);
  for (; i < n; ++i) {
    const uint16_t b = float_to_half_bits(x[i]);
    std::memcpy(out + 2 * i, &b, 2);
  }
}

}  // namespace akv::cpu::impl
