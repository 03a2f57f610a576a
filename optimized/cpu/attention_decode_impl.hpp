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

// kernels_impl.hpp's scores of keys [j0, j1) of a block for one head (K2 dots, not scaled).
template <class S>
void scores(const float* q, const float* k, int stride, int hd, float* e, int j0, int j1);

// The raw K2 dots (not scaled) of keys [0, nb) of a block (row p at kb + p*ks, head_dim 16*C)
// with the G query heads q + h*16*C, into e[h*es + p]. Eight keys at a time: per key and head the
// lane chains fma(q[16b + l], k[16b + l], .) over b = 0..C-1 from +0, then K2's tree (S::reduce8),
// as dot8; the G heads share each load of a key's lane set. The last nb mod 8 keys: dot4 / dot.
template <class S, int C>
void decode_scores(const float* q, int G, const float* kb, int ks, int nb, float* e, size_t es) {
  using V = typename S::V;
  constexpr int hd = C * kLanes;
  int j0 = 0;
  for (; j0 + 8 <= nb; j0 += 8) {
    V a[kDecodeHeads][8];
    for (int h = 0; h < G; ++h)
      for (int c = 0; c < 8; ++c) a[h][c] = S::zero();
    for (int c0 = 0; c0 < 8; c0 += 4)
      for (int b = 0; b < C; ++b) {
        V k[4];
        for (int c = 0; c < 4; ++c) k[c] = S::load(kb + static_cast<size_t>(j0 + c0 + c) * ks + b * kLanes);
        for (int h = 0; h < G; ++h) {
          const V qb = S::load(q + static_cast<size_t>(h) * hd + b * kLanes);
          for (int c = 0; c < 4; ++c) a[h][c0 + c] = S::fma(qb, k[c], a[h][c0 + c]);
        }
      }
    for (int h = 0; h < G; ++h) S::reduce8(a[h], e + h * es + j0);
  }
  if (j0 < nb)
    for (int h = 0; h < G; ++h) scores<S>(q + static_cast<size_t>(h) * hd, kb, ks, hd, e + h * es, j0, nb);
}

// Phase 1 of one block for the G heads: scaled scores s_p = dot * scale into e[h*es + p], and
// each head's block max left to right (mb = mb < s_p ? s_p : mb from s_0), the G chains side by side.
template <class S>
void decode_block_scores(const AttnArgs& a, const float* kb, int ks, int nb, float* e, size_t es, float* mb) {
  const int G = a.group;
  switch (a.head_dim) {
    case 32: decode_scores<S, 2>(a.q, G, kb, ks, nb, e, es); break;
    case 64: decode_scores<S, 4>(a.q, G, kb, ks, nb, e, es); break;
    default: decode_scores<S, 8>(a.q, G, kb, ks, nb, e, es); break;  // 128 (split_attention_applies)
  }
  const typename S::V vs = S::set1(a.scale);
  for (int h = 0; h < G; ++h) {
    float* eh = e + h * es;
    int j = 0;
    for (; j + kLanes <= nb; j += kLanes) S::store(eh + j, S::mul(S::load(eh + j), vs));
    for (; j < nb; ++j) eh[j] = eh[j] * a.scale;
  }
  float m[kDecodeHeads];
  for (int h = 0; h < G; ++h) m[h] = e[h * es];
  for (int j = 1; j < nb; ++j)
    for (int h = 0; h < G; ++h) m[h] = m[h] < e[h * es + j] ? e[h * es + j] : m[h];
  for (int h = 0; h < G; ++h) mb[h] = m[h];
}

// Phase 2's sums of one block for the G heads: l_b = l_b + e_p from +0 in key order, the G chains
// side by side; e_p of head h at e[h][p].
inline void decode_block_sums(int G, const float* const* e, int nb, float* l) {
  float acc[kDecodeHeads];
  for (int h = 0; h < G; ++h) acc[h] = 0.0f;
  for (int j = 0; j < nb; ++j)
    for (int h = 0; h < G; ++h) acc[h] = acc[h] + e[h][j];
  for (int h = 0; h < G; ++h) l[h] = acc[h];
}

}  // namespace akv::cpu::impl
