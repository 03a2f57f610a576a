// The decode split's inner loops (spec/kernels-cpu.md K4 "Split over key blocks"), over the 16-lane
// SIMD type S of kernels_impl.hpp, which includes this file: the group's query heads read each
// loaded key row together, and their serial chains (the block max, l) advance side by side. Each
// (token, head) pair still performs K4's operations, on K4's operands, in K4's order: only which of
// them share a load or run between each other's steps changes, so no bit moves.
#pragma once
#include <algorithm>

#include "optimized/cpu/kernels.hpp"
#include "reference/exp.hpp"

namespace akv::cpu::impl {

/// Most query heads a decode item carries (split_attention_applies: group <= 6).
inline constexpr int kDecodeHeads = 6;

// The raw K2 dots (not scaled) of keys [0, nb8) of a block (a row view of kv_rows_impl.hpp, read
// in place, head_dim 16*C) with HG query heads q + h*16*C, into e[h*es + p],
// eight keys at a time: per key and head the lane chains fma(q[16b + l], k[16b + l], .) over
// b = 0..C-1 from +0, then K2's tree (S::reduce8), as dot8; the HG heads share each load of a
// key's lane set. Every bound is a constant, so the HG x 8 accumulators live in registers.
template <class S, class R, int C, int HG>
void decode_scores_run(const float* q, const R& kb, int nb8, float* e, size_t es) {
  using V = typename S::V;
  constexpr int hd = C * kLanes;
  for (int j0 = 0; j0 < nb8; j0 += 8) {
    V a[HG][8];
    for (int h = 0; h < HG; ++h)
      for (int c = 0; c < 8; ++c) a[h][c] = S::zero();
    for (int c0 = 0; c0 < 8; c0 += 4)
      for (int b = 0; b < C; ++b) {
        V k[4];
        for (int c = 0; c < 4; ++c) k[c] = kb.lanes(j0 + c0 + c, b);
        for (int h = 0; h < HG; ++h) {
          const V qb = S::load(q + static_cast<size_t>(h) * hd + b * kLanes);
          for (int c = 0; c < 4; ++c) a[h][c0 + c] = S::fma(qb, k[c], a[h][c0 + c]);
        }
      }
    for (int h = 0; h < HG; ++h) S::reduce8(a[h], e + h * es + j0);
  }
}

// The raw K2 dots of keys [0, nb) of a block with the G query heads q + h*16*C, into e[h*es + p]:
// runs of heads sharing the key loads (three at a time where 24 accumulators fit the registers),
// eight keys at a time; the last nb mod 8 keys one at a time (K2's chains, then S::reduce, as dot).
template <class S, class R, int C>
void decode_scores(const float* q, int G, const R& kb, int nb, float* e, size_t es) {
  constexpr int kRunHeads = S::kTileBudget >= 24 ? 3 : 1;
  constexpr int hd = C * kLanes;
  const int nb8 = nb / 8 * 8;
  for (int h0 = 0; h0 < G; h0 += kRunHeads) {
    const float* qh = q + static_cast<size_t>(h0) * hd;
    float* eh = e + h0 * es;
    switch (std::min(kRunHeads, G - h0)) {
      case 1: decode_scores_run<S, R, C, 1>(qh, kb, nb8, eh, es); break;
      case 2: decode_scores_run<S, R, C, 2>(qh, kb, nb8, eh, es); break;
      default: decode_scores_run<S, R, C, kRunHeads>(qh, kb, nb8, eh, es); break;
    }
  }
  for (int j = nb8; j < nb; ++j)
    for (int h = 0; h < G; ++h) {
      typename S::V acc = S::zero();
      for (int b = 0; b < C; ++b)
        acc = S::fma(S::load(q + static_cast<size_t>(h) * hd + b * kLanes), kb.lanes(j, b), acc);
      e[h * es + j] = S::reduce(acc);
    }
}

// Each of the G heads' block max, left to right (m = m < s_p ? s_p : m from s_0), the chains
// side by side in registers; s_p of head h at e[h*es + p].
template <int G>
void decode_block_max(const float* e, size_t es, int nb, float* mb) {
  float m[G];
  for (int h = 0; h < G; ++h) m[h] = e[h * es];
  for (int j = 1; j < nb; ++j)
    for (int h = 0; h < G; ++h) m[h] = m[h] < e[h * es + j] ? e[h * es + j] : m[h];
  for (int h = 0; h < G; ++h) mb[h] = m[h];
}

// Phase 1 of one block for the G heads: scaled scores s_p = dot * scale into e[h*es + p], and
// each head's block max (decode_block_max).
template <class S, class R>
void decode_block_scores(const AttnArgs& a, const R& kb, int nb, float* e, size_t es, float* mb) {
  const int G = a.group;
  switch (a.head_dim) {
    case 32: decode_scores<S, R, 2>(a.q, G, kb, nb, e, es); break;
    case 64: decode_scores<S, R, 4>(a.q, G, kb, nb, e, es); break;
    default: decode_scores<S, R, 8>(a.q, G, kb, nb, e, es); break;  // 128 (split_attention_applies)
  }
  const typename S::V vs = S::set1(a.scale);
  for (int h = 0; h < G; ++h) {
    float* eh = e + h * es;
    int j = 0;
    for (; j + kLanes <= nb; j += kLanes) S::store(eh + j, S::mul(S::load(eh + j), vs));
    for (; j < nb; ++j) eh[j] = eh[j] * a.scale;
  }
  switch (G) {
    case 1: return decode_block_max<1>(e, es, nb, mb);
    case 2: return decode_block_max<2>(e, es, nb, mb);
    case 3: return decode_block_max<3>(e, es, nb, mb);
    case 4: return decode_block_max<4>(e, es, nb, mb);
    case 5: return decode_block_max<5>(e, es, nb, mb);
    default: return decode_block_max<6>(e, es, nb, mb);
  }
}

// Phase 2's sums of one block for G heads: l_b = l_b + e_p from +0 in key order, the chains side
// by side in registers; e_p of head h at e[h][p].
template <int G>
void decode_block_sums_g(const float* const* e, int nb, float* l) {
  float acc[G];
  for (int h = 0; h < G; ++h) acc[h] = 0.0f;
  for (int j = 0; j < nb; ++j)
    for (int h = 0; h < G; ++h) acc[h] = acc[h] + e[h][j];
  for (int h = 0; h < G; ++h) l[h] = acc[h];
}

inline void decode_block_sums(int G, const float* const* e, int nb, float* l) {
  switch (G) {
    case 1: return decode_block_sums_g<1>(e, nb, l);
    case 2: return decode_block_sums_g<2>(e, nb, l);
    case 3: return decode_block_sums_g<3>(e, nb, l);
    case 4: return decode_block_sums_g<4>(e, nb, l);
    case 5: return decode_block_sums_g<5>(e, nb, l);
    default: return decode_block_sums_g<6>(e, nb, l);
  }
}

}  // namespace akv::cpu::impl
