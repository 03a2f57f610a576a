// The CPU kernels, written once over a 16-lane SIMD type S (spec/kernels-cpu.md K1-K7).
// Each kernels_<isa>.cpp includes this after selecting its target, with its own S:
//   S::V                     16 floats (lanes 0..15)
//   S::zero/load/store/set1  as named; load/store unaligned
//   S::fma(a, b, c)          a*b + c per lane, one rounding (IEEE fusedMultiplyAdd)
//   S::add/sub/mul/div       per lane, IEEE
//   S::reduce(v)             the canonical tree of K2: for w = 8, 4, 2, 1: v[l] += v[l + w]
//   S::reduce8(a, out)       out[c] = S::reduce(a[c]) for c < 8, bit for bit (may pack the trees)
//   S::exp(v)                akv::exp per lane, same IEEE operations (K7)
//   S::select_lt(x, y, a, b) per lane x < y ? a : b (an ordered compare: false on NaN)
//   S::kTileBudget           V accumulators a matmul tile may hold in registers
//   S::u4(p, s)              16 words p[0..15] (64 bytes) -> lane l = float((p[l] >> 4s) & 15) (exact)
//   S::s8(p)                 16 bytes -> lane l = float(int8_t(p[l])) (exact)
// Every function is a template over S, so the three instantiations never share a symbol.
#pragma once
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "optimized/cpu/kernels.hpp"
#include "optimized/cpu/attention_decode_impl.hpp"
#include "optimized/cpu/kv_rows_impl.hpp"
#include "reference/exp.hpp"

namespace akv::cpu::impl {

// ---------------------------------------------------------------- matmul (K1)

// An R x (16P) register tile: rows [0, R) of X times panels [0, P) starting at W. Per output,
// k in blocks of kMatmulBlock: one FMA chain per block from +0, the block sums added in block
// order (K1). `cols` = valid output columns in the tile (the rest is panel padding).
template <class S, int R, int P>
void tile(const float* X, size_t ldx, const float* W, size_t wstride, int n, float* Y, size_t ldy, int cols) {
  // acc and total start defined (zero) so that GCC sees them written before any read: total is
  // read only from the second block on, after the first block stored it, and acc is set again
  // at each block; so the zeros change no bit (K10's goldens and the memcmp tests hold it).
  typename S::V acc[R][P];
  for (int r = 0; r < R; ++r)
    for (int p = 0; p < P; ++p) acc[r][p] = S::zero();
  alignas(64) float total[R][P][kLanes] = {};  // sum of the blocks before the current one
  for (int k0 = 0; k0 < n; k0 += kMatmulBlock) {
    const int k1 = std::min(n, k0 + kMatmulBlock);
    for (int r = 0; r < R; ++r)
      for (int p = 0; p < P; ++p) acc[r][p] = S::zero();
    for (int k = k0; k < k1; ++k) {
      typename S::V w[P];
      for (int p = 0; p < P; ++p) w[p] = S::load(W + p * wstride + static_cast<size_t>(k) * kLanes);
      for (int r = 0; r < R; ++r) {
        const typename S::V b = S::set1(X[r * ldx + k]);
        for (int p = 0; p < P; ++p) acc[r][p] = S::fma(b, w[p], acc[r][p]);
      }
    }
    if (k0 > 0)
      for (int r = 0; r < R; ++r)
        for (int p = 0; p < P; ++p) acc[r][p] = S::add(S::load(total[r][p]), acc[r][p]);
    if (k1 < n)
      for (int r = 0; r < R; ++r)
        for (int p = 0; p < P; ++p) S::store(total[r][p], acc[r][p]);
  }
  for (int r = 0; r < R; ++r)
    for (int p = 0; p < P; ++p) {
      float* y = Y + r * ldy + p * kLanes;
      const int valid = std::min(kLanes, cols - p * kLanes);
      if (valid == kLanes) {
        S::store(y, acc[r][p]);
      } else if (valid > 0) {
        alignas(64) float t[kLanes];
        S::store(t, acc[r][p]);
        std::copy_n(t, valid, y);
      }
    }
}

template <class S, int R>
void tile_p(int P, const float* X, size_t ldx, const float* W, size_t wstride, int n, float* Y, size_t ldy, int cols) {
  switch (P) {
    case 1: return tile<S, R, 1>(X, ldx, W, wstride, n, Y, ldy, cols);
    case 2: return tile<S, R, 2>(X, ldx, W, wstride, n, Y, ldy, cols);
    case 3: return tile<S, R, 3>(X, ldx, W, wstride, n, Y, ldy, cols);
    case 4: return tile<S, R, 4>(X, ldx, W, wstride, n, Y, ldy, cols);
    case 6: return tile<S, R, 6>(X, ldx, W, wstride, n, Y, ldy, cols);
    default: return tile<S, R, 12>(X, ldx, W, wstride, n, Y, ldy, cols);
  }
}

template <class S>
void tile_rp(int R, int P, const float* X, size_t ldx, const float* W, size_t wstride, int n, float* Y, size_t ldy,
             int cols) {
  switch (R) {
    case 1: return tile_p<S, 1>(P, X, ldx, W, wstride, n, Y, ldy, cols);
    case 2: return tile_p<S, 2>(P, X, ldx, W, wstride, n, Y, ldy, cols);
    case 3: return tile_p<S, 3>(P, X, ldx, W, wstride, n, Y, ldy, cols);
    case 4: return tile_p<S, 4>(P, X, ldx, W, wstride, n, Y, ldy, cols);
    case 5: return tile_p<S, 5>(P, X, ldx, W, wstride, n, Y, ldy, cols);
    default: return tile_p<S, 6>(P, X, ldx, W, wstride, n, Y, ldy, cols);
  }
}

// Largest supported panel count <= want.
inline int panel_step(int want) {
  for (int p : {12, 6, 4, 3, 2})
    if (p <= want) return p;
  return 1;
}

// ---- quantized panels (K15): each weight computed from the file's block right before its FMA

// The float32 value of the 16 lanes' weights at k = kb + j (j < 32) of one panel block `blk`, by
// the float operations of spec/gguf.md Q3-Q5, so the bits reference/ reads: Q8_0 float(q) * d;
// Q4_0 (float(q) - 8) * d, the difference exact, as float(q - 8) * d; Q4_1 d * float(q) + m,
// where d * float(q) is exact (11 by 4 significant bits), so the one rounding of fma(d, q, m) is
// the add's of the two-step form (K15).
template <class S, PanelFormat F>
inline typename S::V qweight(const uint8_t* blk, int j, typename S::V d, typename S::V m) {
  if constexpr (F == PanelFormat::kQ8_0) {
    return S::mul(S::s8(blk + 64 + j * kLanes), d);
  } else if constexpr (F == PanelFormat::kQ4_0) {
    return S::mul(S::sub(S::u4(blk + 64 + (j / 8) * 64, j % 8), S::set1(8.0f)), d);
  } else {
    return S::fma(d, S::u4(blk + 128 + (j / 8) * 64, j % 8), m);
  }
}

// The 32 k-steps [kb, kb + 32) of one block into an R x P tile: the weights computed once per k
// for all R rows (qweight), then one FMA per row, as tile() does with loaded weights.
template <class S, int R, int P, PanelFormat F>
inline void qsteps(const float* X, size_t ldx, const uint8_t* const* blk, const typename S::V* d, const typename S::V* m,
                   int kb, typename S::V (&acc)[R][P]) {
#pragma GCC unroll 32
  for (int j = 0; j < kQuantBlock; ++j) {
    typename S::V w[P];
    for (int p = 0; p < P; ++p) w[p] = qweight<S, F>(blk[p], j, d[p], m[p]);
    for (int r = 0; r < R; ++r) {
      const typename S::V b = S::set1(X[r * ldx + kb + j]);
      for (int p = 0; p < P; ++p) acc[r][p] = S::fma(b, w[p], acc[r][p]);
    }
  }
}

// tile() on quantized panels: the same chains over k in blocks of kMatmulBlock, the same adds of
// the block sums; only where the weight comes from differs (K15).
template <class S, int R, int P, PanelFormat F>
void qtile(const float* X, size_t ldx, const uint8_t* W, size_t wstride, int n, float* Y, size_t ldy, int cols) {
  constexpr int kB = panel_block_bytes(F);
  typename S::V acc[R][P];  // defined from the start, as in tile()
  for (int r = 0; r < R; ++r)
    for (int p = 0; p < P; ++p) acc[r][p] = S::zero();
  alignas(64) float total[R][P][kLanes] = {};
  for (int k0 = 0; k0 < n; k0 += kMatmulBlock) {
    const int k1 = std::min(n, k0 + kMatmulBlock);
    for (int r = 0; r < R; ++r)
      for (int p = 0; p < P; ++p) acc[r][p] = S::zero();
    for (int kb = k0; kb < k1; kb += kQuantBlock) {
      const uint8_t* blk[P];
      typename S::V d[P], m[P];
      for (int p = 0; p < P; ++p) {
        blk[p] = W + p * wstride + static_cast<size_t>(kb / kQuantBlock) * kB;
        d[p] = S::load(reinterpret_cast<const float*>(blk[p]));
        m[p] = F == PanelFormat::kQ4_1 ? S::load(reinterpret_cast<const float*>(blk[p]) + kLanes) : S::zero();
      }
      qsteps<S, R, P, F>(X, ldx, blk, d, m, kb, acc);
    }
    if (k0 > 0)
      for (int r = 0; r < R; ++r)
        for (int p = 0; p < P; ++p) acc[r][p] = S::add(S::load(total[r][p]), acc[r][p]);
    if (k1 < n)
      for (int r = 0; r < R; ++r)
        for (int p = 0; p < P; ++p) S::store(total[r][p], acc[r][p]);
  }
  for (int r = 0; r < R; ++r)
    for (int p = 0; p < P; ++p) {
      float* y = Y + r * ldy + p * kLanes;
      const int valid = std::min(kLanes, cols - p * kLanes);
      if (valid == kLanes) {
        S::store(y, acc[r][p]);
      } else if (valid > 0) {
        alignas(64) float t[kLanes];
        S::store(t, acc[r][p]);
        std::copy_n(t, valid, y);
      }
    }
}

template <class S, PanelFormat F, int R>
void qtile_p(int P, const float* X, size_t ldx, const uint8_t* W, size_t wstride, int n, float* Y, size_t ldy, int cols) {
  switch (P) {
    case 1: return qtile<S, R, 1, F>(X, ldx, W, wstride, n, Y, ldy, cols);
    case 2: return qtile<S, R, 2, F>(X, ldx, W, wstride, n, Y, ldy, cols);
    case 3: return qtile<S, R, 3, F>(X, ldx, W, wstride, n, Y, ldy, cols);
    default: return qtile<S, R, 4, F>(X, ldx, W, wstride, n, Y, ldy, cols);
  }
}

template <class S, PanelFormat F>
void qtile_rp(int R, int P, const float* X, size_t ldx, const uint8_t* W, size_t wstride, int n, float* Y, size_t ldy,
              int cols) {
  switch (R) {
    case 1: return qtile_p<S, F, 1>(P, X, ldx, W, wstride, n, Y, ldy, cols);
    case 2: return qtile_p<S, F, 2>(P, X, ldx, W, wstride, n, Y, ldy, cols);
    case 3: return qtile_p<S, F, 3>(P, X, ldx, W, wstride, n, Y, ldy, cols);
    default: return qtile_p<S, F, 4>(P, X, ldx, W, wstride, n, Y, ldy, cols);
  }
}

// Panels [p, p + np) of W as float32 panels into `out` (np * n * 16 floats): the weights qtile
// computes, by the same qweight, stored (the prefill path: computed once for many rows).
template <class S, PanelFormat F>
void dequantize_panels(const PackedMatrix& W, int p, int np, float* out) {
  constexpr int kB = panel_block_bytes(F);
  for (int i = 0; i < np; ++i) {
    const uint8_t* panel = W.qpanel(p + i);
    float* o = out + static_cast<size_t>(i) * W.n * kLanes;
    for (int b = 0; b < W.n / kQuantBlock; ++b) {
      const uint8_t* blk = panel + static_cast<size_t>(b) * kB;
      const typename S::V d = S::load(reinterpret_cast<const float*>(blk));
      const typename S::V m = F == PanelFormat::kQ4_1 ? S::load(reinterpret_cast<const float*>(blk) + kLanes) : S::zero();
      float* ob = o + static_cast<size_t>(b) * kQuantBlock * kLanes;
      for (int j = 0; j < kQuantBlock; ++j) S::store(ob + j * kLanes, qweight<S, F>(blk, j, d, m));
    }
  }
}

// Forward declaration: the float32 tiles below.
template <class S>
void matmul_f32(const float* X, size_t ldx, int rows, const PackedMatrix& W, int p0, int p1, float* Y, size_t ldy);

/// Rows up to which a quantized matmul computes weights in registers (qtile); more rows share
/// weights computed once into float32 panels (dequantize_panels). Either way the same bits.
inline constexpr int kQuantFusedRows = 4;

template <class S, PanelFormat F>
void matmul_quant(const float* X, size_t ldx, int rows, const PackedMatrix& W, int p0, int p1, float* Y, size_t ldy) {
  const size_t wstride = W.panel_bytes();
  if (rows <= kQuantFusedRows) {
    const int R = rows;
    const int P = std::max(1, std::min(4, (S::kTileBudget >= 24 ? 16 : S::kTileBudget) / R));
    for (int p = p0; p < p1;) {
      const int np = std::min(P, p1 - p);
      const int cols = std::min(np * kLanes, W.d - p * kLanes);
      qtile_rp<S, F>(R, np, X, ldx, W.qpanel(p), wstride, W.n, Y + p * kLanes, ldy, cols);
      p += np;
    }
    return;
  }
  // Per block of kRows rows (kept in cache), panel groups of kGroup: computed once into float32
  // panels, then the block's rows through tile().
  constexpr int kGroup = 4, kRows = 192;
  // The group as a float32 matrix of np panels. 64-byte aligned like every packed panel: a
  // 64-byte load that splits two cache lines cost this path 13-16% on an AVX-512 Xeon
  // (docs/performance.md). New storage starts as NaN; each group overwrites what it reads.
  thread_local PackedMatrix view;
  thread_local size_t capacity = 0;
  const size_t need = static_cast<size_t>(kGroup) * W.n * kLanes;
  if (need > capacity) {
    view.data = aligned_panel_storage(need * sizeof(float));
    std::fill_n(view.data.get(), need, std::numeric_limits<float>::quiet_NaN());
    capacity = need;
  }
  view.n = W.n;
  for (int r0 = 0; r0 < rows; r0 += kRows) {
    const int nr = std::min(kRows, rows - r0);
    for (int p = p0; p < p1; p += kGroup) {
      const int np = std::min(kGroup, p1 - p);
      dequantize_panels<S, F>(W, p, np, view.data.get());
      view.d = std::min(np * kLanes, W.d - p * kLanes);
      matmul_f32<S>(X + r0 * ldx, ldx, nr, view, 0, np, Y + r0 * ldy + p * kLanes, ldy);
    }
  }
}

// Tiling changes only which outputs share registers, never an output's chain (K1).
template <class S>
void matmul(const float* X, size_t ldx, int rows, const PackedMatrix& W, int p0, int p1, float* Y, size_t ldy) {
  switch (W.format) {
    case PanelFormat::kQ4_0: return matmul_quant<S, PanelFormat::kQ4_0>(X, ldx, rows, W, p0, p1, Y, ldy);
    case PanelFormat::kQ4_1: return matmul_quant<S, PanelFormat::kQ4_1>(X, ldx, rows, W, p0, p1, Y, ldy);
    case PanelFormat::kQ8_0: return matmul_quant<S, PanelFormat::kQ8_0>(X, ldx, rows, W, p0, p1, Y, ldy);
    case PanelFormat::kF32: break;
  }
  matmul_f32<S>(X, ldx, rows, W, p0, p1, Y, ldy);
}

template <class S>
void matmul_f32(const float* X, size_t ldx, int rows, const PackedMatrix& W, int p0, int p1, float* Y, size_t ldy) {
  constexpr int kMaxR = 6;
  constexpr int kRowBlock = 48;  // rows of X kept hot while panels stream past
  const size_t wstride = static_cast<size_t>(W.n) * kLanes;
  for (int r0 = 0; r0 < rows; r0 += kRowBlock) {
    const int r1 = std::min(rows, r0 + kRowBlock);
    const int R = std::min(kMaxR, r1 - r0);
    const int P = panel_step(std::max(1, S::kTileBudget / R));
    for (int p = p0; p < p1;) {
      const int np = panel_step(std::min(P, p1 - p));
      const int cols = std::min(np * kLanes, W.d - p * kLanes);
      for (int r = r0; r < r1; r += kMaxR)
        tile_rp<S>(std::min(kMaxR, r1 - r), np, X + r * ldx, ldx, W.panel(p), wstride, W.n, Y + r * ldy + p * kLanes,
                   ldy, cols);
      p += np;
    }
  }
}

// ---------------------------------------------------------------- dot, RMSNorm (K2, K3)

// The canonical dot (K2): lane l takes elements j = l (mod 16) of the full 16-blocks, one FMA
// chain each from +0; the lanes meet in the fixed tree; the n mod 16 tail follows by FMA in order.
template <class S>
float dot(const float* x, const float* y, int n) {
  typename S::V acc = S::zero();
  int j = 0;
  for (; j + kLanes <= n; j += kLanes) acc = S::fma(S::load(x + j), S::load(y + j), acc);
  float r = S::reduce(acc);
  for (; j < n; ++j) r = std::fma(x[j], y[j], r);
  return r;
}

template <class S>
void rmsnorm(float* out, const float* x, const float* w, int n, float eps) {
  const float ss = dot<S>(x, x, n);
  const float inv = 1.0f / std::sqrt(ss / static_cast<float>(n) + eps);
  const typename S::V vinv = S::set1(inv);
  int j = 0;
  for (; j + kLanes <= n; j += kLanes) S::store(out + j, S::mul(S::mul(S::load(x + j), vinv), S::load(w + j)));
  for (; j < n; ++j) out[j] = (x[j] * inv) * w[j];
}

// ---------------------------------------------------------------- elementwise (K5, K6, K7)

// Only the mutant table of K13's teeth test (tests/) sets S::kMutantContractRope.
template <class S>
inline constexpr bool mutant_contract_rope = requires { requires S::kMutantContractRope; };

template <class S>
void rope(float* x, int n_heads, int head_dim, const float* cos, const float* sin) {
  const int half = head_dim / 2;
  for (int h = 0; h < n_heads; ++h) {
    float* v = x + static_cast<size_t>(h) * head_dim;
    int i = 0;
    for (; i + kLanes <= half; i += kLanes) {
      const typename S::V x0 = S::load(v + i), x1 = S::load(v + i + half);
      const typename S::V c = S::load(cos + i), s = S::load(sin + i);
      S::store(v + i, S::sub(S::mul(x0, c), S::mul(x1, s)));
      if constexpr (mutant_contract_rope<S>)  // K13's test seam: fma(x0, s, x1*c), as contraction would
        S::store(v + i + half, S::fma(x0, s, S::mul(x1, c)));
      else
        S::store(v + i + half, S::add(S::mul(x0, s), S::mul(x1, c)));
    }
    for (; i < half; ++i) {
      const float x0 = v[i], x1 = v[i + half], c = cos[i], s = sin[i];
      v[i] = x0 * c - x1 * s;
      v[i + half] = x0 * s + x1 * c;
    }
  }
}

template <class S>
void swiglu(float* out, const float* gate, const float* up, int n) {
  const typename S::V one = S::set1(1.0f), minus = S::set1(-1.0f);
  int j = 0;
  for (; j + kLanes <= n; j += kLanes) {
    const typename S::V g = S::load(gate + j);
    const typename S::V e = S::exp(S::mul(g, minus));  // -g exactly
    S::store(out + j, S::mul(S::div(g, S::add(one, e)), S::load(up + j)));
  }
  for (; j < n; ++j) out[j] = (gate[j] / (1.0f + akv::exp(-gate[j]))) * up[j];
}

template <class S>
void add(float* x, const float* y, int n) {
  int j = 0;
  for (; j + kLanes <= n; j += kLanes) S::store(x + j, S::add(S::load(x + j), S::load(y + j)));
  for (; j < n; ++j) x[j] = x[j] + y[j];
}

template <class S>
void exp(float* out, const float* x, int n) {
  int j = 0;
  for (; j + kLanes <= n; j += kLanes) S::store(out + j, S::exp(S::load(x + j)));
  for (; j < n; ++j) out[j] = akv::exp(x[j]);
}

}  // namespace akv::cpu::impl

// Attention (K4), its three paths: attention_impl.hpp.
#include "optimized/cpu/attention_impl.hpp"

namespace akv::cpu::impl {

template <class S>
Kernels table(Isa isa) {
  return Kernels{isa,       &matmul<S>, &dot<S>, &rmsnorm<S>, &rope<S>, &attention<S>, &swiglu<S>, &add<S>, &exp<S>,
                 &attention_split_scores<S>, &attention_split_values<S>, &attention_split_fold<S>, &kv_encode<S>,
                 &kv_decode<S>};
}

}  // namespace akv::cpu::impl
