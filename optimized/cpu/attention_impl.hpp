// Attention (spec/kernels-cpu.md K4) over the 16-lane SIMD type S, moved out of kernels_impl.hpp,
// which includes this file after the K1-K7 kernels it calls (dot, exp). Three paths, each giving
// every (token, head) state exactly K4's operations in K4's order, so the same bits:
// - attention(): the item path, taken by default: per key block the states' scores, softmax
//   steps and value sums, a chunk of cache rows read once for all states (K4, K8's items);
// - attention_lanes(): taken from attention() for items of kLaneMinStates states or more, no
//   mask, head_dim 32, 64 or 128: lane s of a lane set carries state s (K4, "states in lanes");
// - attention_split_scores / _values / _fold: a decode item (one row, no mask, 2+ threads, past
//   the first key block; split_attention_applies in kernels.hpp) whose key blocks are spread
//   over threads, its inner loops in attention_decode_impl.hpp (K4 "Split over key blocks", K8).
#pragma once
#include <algorithm>
#include <cmath>
#include <limits>

#include "optimized/cpu/attention_decode_impl.hpp"
#include "optimized/cpu/kernels.hpp"
#include "optimized/cpu/kv_rows_impl.hpp"
#include "reference/exp.hpp"

namespace akv::cpu::impl {

// ---------------------------------------------------------------- attention (K4)

// Four canonical dots (K2) of q with keys k, k + stride, ... (hd % 16 == 0), not yet scaled.
template <class S>
void dot4(const float* q, const float* k, int stride, int hd, float* out) {
  typename S::V a0 = S::zero(), a1 = S::zero(), a2 = S::zero(), a3 = S::zero();
  for (int j = 0; j < hd; j += kLanes) {
    const typename S::V qj = S::load(q + j);
    a0 = S::fma(qj, S::load(k + j), a0);
    a1 = S::fma(qj, S::load(k + stride + j), a1);
    a2 = S::fma(qj, S::load(k + 2 * static_cast<size_t>(stride) + j), a2);
    a3 = S::fma(qj, S::load(k + 3 * static_cast<size_t>(stride) + j), a3);
  }
  out[0] = S::reduce(a0);
  out[1] = S::reduce(a1);
  out[2] = S::reduce(a2);
  out[3] = S::reduce(a3);
}

// Eight canonical dots (K2) of q with keys k + c*stride, c < 8 (hd % 16 == 0), not yet scaled:
// the lane chains of dot4, then the eight K2 trees evaluated side by side (S::reduce8: the same
// adds on the same operands as S::reduce, only packed across keys).
template <class S>
void dot8(const float* q, const float* k, int stride, int hd, float* out) {
  typename S::V a[8];
  for (int c = 0; c < 8; ++c) a[c] = S::zero();
  for (int c0 = 0; c0 < 8; c0 += 4)
    for (int j = 0; j < hd; j += kLanes) {
      const typename S::V qj = S::load(q + j);
      for (int c = c0; c < c0 + 4; ++c) a[c] = S::fma(qj, S::load(k + static_cast<size_t>(c) * stride + j), a[c]);
    }
  S::reduce8(a, out);
}

// K4 step 5 for one query head's acc (out, hd) over keys [0, nb) of a block: the block's own
// chain acc_b[i] = fma(e_j, v_j[i], acc_b[i]) from +0 for j in key order (e_j at e[j*es]), then
// the fold acc[i] = fma(acc[i], alpha, acc_b[i]).
template <class S, int C>
void accumulate_keys(float* out, const float* v, int stride, const float* e, int nb, float alpha, int es) {
  typename S::V acc[C];
  for (int c = 0; c < C; ++c) acc[c] = S::zero();
  for (int j = 0; j < nb; ++j) {
    const typename S::V ej = S::set1(e[j * es]);
    const float* vj = v + static_cast<size_t>(j) * stride;
    for (int c = 0; c < C; ++c) acc[c] = S::fma(ej, S::load(vj + c * kLanes), acc[c]);
  }
  const typename S::V va = S::set1(alpha);
  for (int c = 0; c < C; ++c) S::store(out + c * kLanes, S::fma(S::load(out + c * kLanes), va, acc[c]));
}

template <class S>
void accumulate_keys_any(float* out, const float* v, int stride, const float* e, int nb, float alpha, int hd, int es) {
  int i = 0;
  switch (hd) {  // the whole row in registers, keys outer: same per-element chain (K4 step 5)
    case 32: return accumulate_keys<S, 2>(out, v, stride, e, nb, alpha, es);
    case 64: return accumulate_keys<S, 4>(out, v, stride, e, nb, alpha, es);
    case 128: return accumulate_keys<S, 8>(out, v, stride, e, nb, alpha, es);
    default: break;
  }
  for (; i + kLanes <= hd; i += kLanes) accumulate_keys<S, 1>(out + i, v + i, stride, e, nb, alpha, es);
  for (; i < hd; ++i) {
    float acc = 0.0f;
    for (int j = 0; j < nb; ++j) acc = std::fma(e[j * es], v[static_cast<size_t>(j) * stride + i], acc);
    out[i] = std::fma(out[i], alpha, acc);
  }
}

// K4 step 5 for U states over keys [0, nb) of a block, C = head_dim / 16 lane sets each, lane set
// c of v_p given by row(p, c): per state the block's chain acc_b[i] = fma(e_p, v_p[i], acc_b[i])
// from +0 for p in key order, e_p of state u at e[u][p*es], then acc[i] = fma(acc[i], alpha,
// acc_b[i]). The U states only share the loads of v_p: each one's chain is the one it runs alone.
// kFold false: out[u] receives acc_b itself (the split path folds later, K4 "split over key blocks").
template <class S, int U, int C, bool kFold, class Row>
void accumulate_rows(float* const* out, const Row& row, const float* const* e, int nb, const float* alpha, int es) {
  typename S::V acc[U][C];
  for (int u = 0; u < U; ++u)
    for (int c = 0; c < C; ++c) acc[u][c] = S::zero();
  for (int j = 0; j < nb; ++j) {
    typename S::V w[C];
    for (int c = 0; c < C; ++c) w[c] = row(j, c);
    for (int u = 0; u < U; ++u) {
      const typename S::V ej = S::set1(e[u][j * es]);
      for (int c = 0; c < C; ++c) acc[u][c] = S::fma(ej, w[c], acc[u][c]);
    }
  }
  for (int u = 0; u < U; ++u) {
    if constexpr (!kFold) {
      for (int c = 0; c < C; ++c) S::store(out[u] + c * kLanes, acc[u][c]);
      continue;
    }
    const typename S::V va = S::set1(alpha[u]);
    for (int c = 0; c < C; ++c) S::store(out[u] + c * kLanes, S::fma(S::load(out[u] + c * kLanes), va, acc[u][c]));
  }
}

// accumulate_rows over float32 rows v + p*stride.
template <class S, int U, int C, bool kFold = true>
void accumulate_block(float* const* out, const float* v, int stride, const float* const* e, int nb, const float* alpha,
                      int es) {
  auto row = [&](int j, int c) { return S::load(v + static_cast<size_t>(j) * stride + c * kLanes); };
  accumulate_rows<S, U, C, kFold>(out, row, e, nb, alpha, es);
}

template <class S, int C>
void accumulate_block_u(int u, float* const* out, const float* v, int stride, const float* const* e, int nb,
                        const float* alpha, int es) {
  switch (u) {
    case 1: return accumulate_block<S, 1, C>(out, v, stride, e, nb, alpha, es);
    case 2: return accumulate_block<S, 2, C>(out, v, stride, e, nb, alpha, es);
    case 3: return accumulate_block<S, 3, C>(out, v, stride, e, nb, alpha, es);
    case 4: return accumulate_block<S, 4, C>(out, v, stride, e, nb, alpha, es);
    case 5: return accumulate_block<S, 5, C>(out, v, stride, e, nb, alpha, es);
    default: return accumulate_block<S, 6, C>(out, v, stride, e, nb, alpha, es);
  }
}

// Step 5 for u <= kRun states with the same nb keys of a block; e_p of state x at e[x][p*es].
template <class S>
void accumulate_states(int u, float* const* out, const float* v, int stride, const float* const* e, int nb,
                       const float* alpha, int hd, int es) {
  switch (hd) {
    case 32: return accumulate_block_u<S, 2>(u, out, v, stride, e, nb, alpha, es);
    case 64:
      if (S::kTileBudget >= 24) return accumulate_block_u<S, 4>(u, out, v, stride, e, nb, alpha, es);
      for (int x = 0; x < u; x += 4)  // fewer registers: at most 4 states' accumulators at a time
        accumulate_block_u<S, 4>(std::min(4, u - x), out + x, v, stride, e + x, nb, alpha + x, es);
      return;
    case 128:  // 8 lane sets a state: two states at a time keep the accumulators in registers
      for (int x = 0; x < u; x += 2)
        if (u - x >= 2) accumulate_block<S, 2, 8>(out + x, v, stride, e + x, nb, alpha + x, es);
        else accumulate_block<S, 1, 8>(out + x, v, stride, e + x, nb, alpha + x, es);
      return;
    default:
      for (int x = 0; x < u; ++x) accumulate_keys_any<S>(out[x], v, stride, e[x], nb, alpha[x], hd, es);
  }
}

/// Most states whose value sums share each v_p load (K4 step 5).
inline constexpr int kRun = 6;

// Step 5 for all n_states states of an item on one block, in runs of up to kRun consecutive
// states with the same key count (nb_of(s)) sharing each v_p load; e_p of state s at e[s*ss + p*es].
template <class S, class NbOf, class OutOf>
void accumulate_item(int n_states, const NbOf& nb_of, const OutOf& out_of, const float* vb, int stride,
                     const float* e, int ss, int es, const float* alpha, int hd) {
  for (int s = 0; s < n_states;) {
    const int nb = nb_of(s);
    int u = 1;
    while (u < kRun && s + u < n_states && nb_of(s + u) == nb) ++u;
    if (nb > 0) {
      float* outs[kRun];
      const float* es_[kRun];
      for (int x = 0; x < u; ++x) {
        outs[x] = out_of(s + x);
        es_[x] = e + static_cast<size_t>(s + x) * ss;
      }
      accumulate_states<S>(u, outs, vb, stride, es_, nb, alpha + s, hd, es);
    }
    s += u;
  }
}

// Scores of keys [j0, j1) of a block for one query head, not yet scaled (K2 dots).
template <class S>
void scores(const float* q, const float* k, int stride, int hd, float* e, int j0, int j1) {
  if (hd % kLanes == 0) {  // several keys' lane chains interleaved: more chains in flight, same bits (K2)
    for (; j0 + 8 <= j1; j0 += 8) dot8<S>(q, k + static_cast<size_t>(j0) * stride, stride, hd, e + j0);
    for (; j0 + 4 <= j1; j0 += 4) dot4<S>(q, k + static_cast<size_t>(j0) * stride, stride, hd, e + j0);
  }
  for (; j0 < j1; ++j0) e[j0] = dot<S>(q, k + static_cast<size_t>(j0) * stride, hd);
}

// Steps 1-4 and 6 of K4 for U query heads on one block, each given its raw dots e[u][0, nb):
// scale, the block max left to right, the running max m, alpha = exp(m_old - m_new),
// e_p = exp(s_p - m_new), the block's l_b = l_b + e_p from +0 in key order, then
// l = fma(l, alpha, l_b); alpha[u] is step 5's.
// The U heads' serial chains (max, l) are interleaved only to overlap their latencies.
// mask: nullptr, or the block's (nb,) mask bytes (spec/leakage.md L3): a masked key's scaled
// score is replaced by -inf before the max, so its weight is exp(-inf - m) = +0 and it adds
// exactly nothing; while every key so far is masked (m_new == -inf) alpha is 1 and acc, l stay 0.
template <class S, int U>
void softmax_block(float* const* e, int nb, float scale, float* m, float* l, float* alpha,
                   const uint8_t* mask) {
  const typename S::V vs = S::set1(scale);
  float mb[U];
  for (int u = 0; u < U; ++u) {
    int j = 0;
    for (; j + kLanes <= nb; j += kLanes) S::store(e[u] + j, S::mul(S::load(e[u] + j), vs));
    for (; j < nb; ++j) e[u][j] = e[u][j] * scale;
    if (mask != nullptr)
      for (j = 0; j < nb; ++j)
        if (mask[j]) e[u][j] = -INFINITY;
    mb[u] = e[u][0];
  }
  for (int j = 1; j < nb; ++j)
    for (int u = 0; u < U; ++u) mb[u] = mb[u] < e[u][j] ? e[u][j] : mb[u];
  for (int u = 0; u < U; ++u) {
    const float m_new = m[u] < mb[u] ? mb[u] : m[u];
    if (mask != nullptr && m_new == -INFINITY) {  // only masked keys so far: nothing to add
      alpha[u] = 1.0f;
      for (int j = 0; j < nb; ++j) e[u][j] = 0.0f;
      continue;
    }
    alpha[u] = akv::exp(m[u] - m_new);
    m[u] = m_new;
    int j = 0;
    const typename S::V vm = S::set1(m_new);
    for (; j + kLanes <= nb; j += kLanes) S::store(e[u] + j, S::exp(S::sub(S::load(e[u] + j), vm)));
    for (; j < nb; ++j) e[u][j] = akv::exp(e[u][j] - m_new);
  }
  float lb[U];
  for (int u = 0; u < U; ++u) lb[u] = 0.0f;
  for (int j = 0; j < nb; ++j)
    for (int u = 0; u < U; ++u) lb[u] = lb[u] + e[u][j];
  for (int u = 0; u < U; ++u) l[u] = std::fma(l[u], alpha[u], lb[u]);
}

// ---- attention with the item's states in lanes (K4, the same operations per state)
//
// For items of many (token, head) states, lane s of a lane set carries state s: the scores of a
// key are computed for 16 states at once, and the softmax's serial chains (the block max, l) run
// one per lane, in key order. Each state still performs exactly the operations of K4 in K4's
// order; only which of them share an instruction changes.

/// Largest head_dim the lane path takes (its transposed queries live on the stack).
inline constexpr int kLaneMaxHeadDim = 128;
static_assert(kLaneMaxHeadDim == kAttentionPathHeadDims.back(), "the lane path's largest head dim is a listed path");
/// Fewest states an item needs to take the lane path (fewer would leave most lanes idle).
inline constexpr int kLaneMinStates = 12;

// One step of the K2 dots of keys [j0, j1) (row p at kb + p*stride, head_dim 16*C) with NV lane
// sets of states, the states' queries transposed (qt[d*es + s]): lane pair (L, L + 8) of the
// tree. Its chains A_L, A_{L+8} (fma(q[16b + l], k[16b + l], .) over b = 0..C-1 from +0) meet as
// S_L = A_L + A_{L+8}, and S_L enters K2's tree at once, the pairs taken in the order
// L = 0, 4, 2, 6, 1, 5, 3, 7 so that each add has its operands, lower lane first:
// t_0 = s_0 + s_4, t_2 = s_2 + s_6, u_0 = t_0 + t_2, t_1 = s_1 + s_5, t_3 = s_3 + s_7, u_1 = t_1 + t_3, and the
// dot u_0 + u_1. Partial sums wait in e (s_0, t_0, u_0; the dot of key p at e[p*es]), t1 (s_2, s_1, t_1)
// and t3 (s_3), rows (p - j0)*es. The step's 2*C*NV query rows stay in registers for all keys.
template <class S, int C, int NV, int L>
void lane_pair(const float* qt, int es, const float* kb, int stride, int j0, int j1, float* e, float* t1, float* t3) {
  using V = typename S::V;
  V w[2][C][NV];
  for (int h = 0; h < 2; ++h)
    for (int b = 0; b < C; ++b)
      for (int v = 0; v < NV; ++v) w[h][b][v] = S::load(qt + static_cast<size_t>(b * kLanes + L + 8 * h) * es + v * kLanes);
  for (int j = j0; j < j1; ++j) {
    const float* k = kb + static_cast<size_t>(j) * stride;
    V acc[2][NV];
    for (int h = 0; h < 2; ++h)
      for (int v = 0; v < NV; ++v) acc[h][v] = S::zero();
    for (int b = 0; b < C; ++b)
      for (int h = 0; h < 2; ++h) {
        const V kd = S::set1(k[b * kLanes + L + 8 * h]);
        for (int v = 0; v < NV; ++v) acc[h][v] = S::fma(w[h][b][v], kd, acc[h][v]);
      }
    for (int v = 0; v < NV; ++v) {
      const V sl = S::add(acc[0][v], acc[1][v]);
      float* pe = e + static_cast<size_t>(j) * es + v * kLanes;
      float* p1 = t1 + static_cast<size_t>(j - j0) * es + v * kLanes;
      float* p3 = t3 + static_cast<size_t>(j - j0) * es + v * kLanes;
      if constexpr (L == 0) S::store(pe, sl);                                        // s_0
      if constexpr (L == 4) S::store(pe, S::add(S::load(pe), sl));                   // t_0
      if constexpr (L == 2 || L == 1) S::store(p1, sl);                              // s_2, s_1
      if constexpr (L == 6) S::store(pe, S::add(S::load(pe), S::add(S::load(p1), sl)));  // u_0
      if constexpr (L == 5) S::store(p1, S::add(S::load(p1), sl));                   // t_1
      if constexpr (L == 3) S::store(p3, sl);                                        // s_3
      if constexpr (L == 7)                                                          // u_0 + u_1
        S::store(pe, S::add(S::load(pe), S::add(S::load(p1), S::add(S::load(p3), sl))));
    }
  }
}

// Raw scores (K2 dots, not yet scaled) of keys [0, nb) of a block for lane sets [0, nv): the dot
// of key p with lane set v's states to e[p*es + 16v], in chunks of 16 keys, NV lane sets a pass.
template <class S, int C, int NV>
void lane_scores(const float* qt, int es, const float* kb, int stride, int nb, float* e) {
  constexpr int kChunk = 16;
  alignas(64) float t1[kChunk * kMaxAttnStates], t3[kChunk * kMaxAttnStates];
  for (int j0 = 0; j0 < nb; j0 += kChunk) {
    const int j1 = std::min(nb, j0 + kChunk);
    lane_pair<S, C, NV, 0>(qt, es, kb, stride, j0, j1, e, t1, t3);
    lane_pair<S, C, NV, 4>(qt, es, kb, stride, j0, j1, e, t1, t3);
    lane_pair<S, C, NV, 2>(qt, es, kb, stride, j0, j1, e, t1, t3);
    lane_pair<S, C, NV, 6>(qt, es, kb, stride, j0, j1, e, t1, t3);
    lane_pair<S, C, NV, 1>(qt, es, kb, stride, j0, j1, e, t1, t3);
    lane_pair<S, C, NV, 5>(qt, es, kb, stride, j0, j1, e, t1, t3);
    lane_pair<S, C, NV, 3>(qt, es, kb, stride, j0, j1, e, t1, t3);
    lane_pair<S, C, NV, 7>(qt, es, kb, stride, j0, j1, e, t1, t3);
  }
}

template <class S, int C>
void lane_block_scores(const float* qt, int es, int nv, const float* kb, int stride, int nb, float* e) {
  constexpr int kSets = S::kTileBudget < 24 ? 1 : C <= 2 ? 4 : C == 4 ? 2 : 1;  // 2*C*kSets query rows in registers: 16
  int v = 0;
  // head_dim 64 with 32 registers: three lane sets a pass (24 query rows, 6 sums, 1 key), so
  // the 48 states of a 16-token GQA-3 item take one pass, not a pass of two and one of one.
  if constexpr (S::kTileBudget >= 24 && C == 4)
    for (; v + 3 <= nv; v += 3) lane_scores<S, C, 3>(qt + v * kLanes, es, kb, stride, nb, e + v * kLanes);
  for (; v + kSets <= nv; v += kSets) lane_scores<S, C, kSets>(qt + v * kLanes, es, kb, stride, nb, e + v * kLanes);
  for (; v < nv; ++v) lane_scores<S, C, 1>(qt + v * kLanes, es, kb, stride, nb, e + v * kLanes);
}

// Steps 1-4 and 6 of K4 on one block for lane set v's states, their raw dots in e[j*es] (lane s
// = state s), key count nb(s) as a float in lane s of nbf (<= 0: the state has no key here and
// keeps its m, l). Per lane: scale; mb = e_0, then mb = mb < e_j ? e_j : mb for j < nb(s);
// m' = m < mb ? mb : m; alpha = exp(m - m'); e_j = exp(e_j - m'); l_b = l_b + e_j from +0 for
// j < nb(s) in key order, then l = fma(l, alpha, l_b); m = m'. kFull: every state of the lane
// set has nb_max keys (lanes past the item's states may compute anything: nothing reads them).
// No mask (L3: scalar path).
template <class S, bool kFull>
void lane_softmax(float* e, int es, int nb_max, typename S::V nbf, float scale, float* m, float* l, float* alpha) {
  using V = typename S::V;
  const V vs = S::set1(scale), zero = S::zero();
  V mb = S::mul(S::load(e), vs);
  S::store(e, mb);
  for (int j = 1; j < nb_max; ++j) {
    float* ej = e + static_cast<size_t>(j) * es;
    const V x = S::mul(S::load(ej), vs);
    S::store(ej, x);
    const V mx = S::select_lt(mb, x, x, mb);
    mb = kFull ? mx : S::select_lt(S::set1(static_cast<float>(j)), nbf, mx, mb);
  }
  const V mo = S::load(m), mn = S::select_lt(mo, mb, mb, mo);
  const V al = S::exp(S::sub(mo, mn));
  S::store(alpha, al);
  V lb = zero;
  for (int j = 0; j < nb_max; ++j) {
    float* ej = e + static_cast<size_t>(j) * es;
    const V x = S::exp(S::sub(S::load(ej), mn));
    S::store(ej, x);
    lb = kFull ? S::add(lb, x) : S::select_lt(S::set1(static_cast<float>(j)), nbf, S::add(lb, x), lb);
  }
  const V lo = S::load(l), lv = S::fma(lo, al, lb);
  if constexpr (kFull) {
    S::store(m, mn);
    S::store(l, lv);
  } else {
    S::store(m, S::select_lt(zero, nbf, mn, mo));
    S::store(l, S::select_lt(zero, nbf, lv, lo));
  }
}

// One attention item (K4) with its rows x group states in lanes; head_dim = 16*C, no mask,
// rows*group <= kMaxAttnStates. Per block: the scores of every key for all states, then the
// softmax per lane set, then the value sums (accumulate_item, as the scalar path).
template <class S, int C>
void attention_lanes(const AttnArgs& a) {
  constexpr int hd = C * kLanes;
  const int G = a.group, n_states = a.rows * G, nv = (n_states + kLanes - 1) / kLanes, es = nv * kLanes;
  alignas(64) float qt[kLaneMaxHeadDim * kMaxAttnStates];
  alignas(64) float e[kKeyBlock * kMaxAttnStates];
  alignas(64) float m[kMaxAttnStates], l[kMaxAttnStates], alpha[kMaxAttnStates], nbf[kMaxAttnStates];
  auto q_of = [&](int s) { return a.q + (s / G) * a.q_stride + static_cast<size_t>(s % G) * hd; };
  auto out_of = [&](int s) { return a.out + (s / G) * a.out_stride + static_cast<size_t>(s % G) * hd; };
  for (int s = 0; s < es; ++s) {  // lanes past n_states: zero queries, never in a block
    const float* q = s < n_states ? q_of(s) : nullptr;
    for (int d = 0; d < hd; ++d) qt[d * es + s] = q != nullptr ? q[d] : 0.0f;
    m[s] = -INFINITY;
    l[s] = 0.0f;
  }
  for (int s = 0; s < n_states; ++s) std::fill_n(out_of(s), hd, 0.0f);
  const int n_last = a.pos + a.rows;  // keys of the last token
  for (int b0 = 0; b0 < n_last; b0 += kKeyBlock) {
    auto nb_of = [&](int s) { return s < n_states ? std::max(0, std::min(kKeyBlock, a.pos + s / G + 1 - b0)) : 0; };
    const int nb_max = nb_of(n_states - 1);
    int ks, vs;  // the rows as float32 (K16): the cache's, or a typed cache's converted
    const float* kb = key_rows<S>(a, b0, nb_max, ks);
    const float* vb = value_rows<S>(a, b0, nb_max, vs);
    for (int s = 0; s < es; ++s) nbf[s] = static_cast<float>(nb_of(s));
    lane_block_scores<S, C>(qt, es, nv, kb, ks, nb_max, e);
    for (int v = 0; v < nv; ++v) {
      bool full = true;  // every state of the lane set has all nb_max keys
      for (int s = v * kLanes; s < std::min(n_states, (v + 1) * kLanes); ++s) full = full && nb_of(s) == nb_max;
      float* ev = e + v * kLanes;
      const typename S::V nbv = S::load(nbf + v * kLanes);
      if (full) lane_softmax<S, true>(ev, es, nb_max, nbv, a.scale, m + v * kLanes, l + v * kLanes, alpha + v * kLanes);
      else lane_softmax<S, false>(ev, es, nb_max, nbv, a.scale, m + v * kLanes, l + v * kLanes, alpha + v * kLanes);
    }
    accumulate_item<S>(n_states, nb_of, out_of, vb, vs, e, 1, es, alpha, hd);
  }
  for (int s = 0; s < n_states; ++s) {
    float* out = out_of(s);
    const typename S::V vl = S::set1(l[s]);
    for (int i = 0; i < hd; i += kLanes) S::store(out + i, S::div(S::load(out + i), vl));
  }
}

// Flash-style attention (K4) of the item's rows x group query heads ("states") over keys in
// blocks anchored at absolute position 0. Per block, the states' scores, then their softmax
// steps, then their value sums; the first and last go through the block in chunks of 8 keys,
// all states per chunk, so that a chunk of cache rows is read from memory once for all of them.
// Each state still runs exactly K4's operations in K4's order on its own data: its bits are
// those it gets alone. out = acc / l at the end. Items of kLaneMinStates states or more without
// a mask, head_dim 32, 64 or 128, take the lane path (attention_lanes): same bits, faster.
template <class S>
void attention(const AttnArgs& a) {
  const int hd = a.head_dim;
  if (a.group > kMaxAttnStates) {  // more heads than states: split the heads
    for (int h0 = 0; h0 < a.group; h0 += kMaxAttnStates) {
      AttnArgs b = a;
      b.group = std::min(kMaxAttnStates, a.group - h0);
      b.q = a.q + static_cast<size_t>(h0) * hd;
      b.out = a.out + static_cast<size_t>(h0) * hd;
      attention<S>(b);
    }
    return;
  }
  if (a.rows * a.group > kMaxAttnStates) {  // split the tokens
    const int per = kMaxAttnStates / a.group;
    for (int t0 = 0; t0 < a.rows; t0 += per) {
      AttnArgs b = a;
      b.rows = std::min(per, a.rows - t0);
      b.pos = a.pos + t0;
      b.q = a.q + t0 * a.q_stride;
      b.out = a.out + t0 * a.out_stride;
      attention<S>(b);
    }
    return;
  }
  if (a.mask == nullptr && a.rows * a.group >= kLaneMinStates) {  // many states: the lane path
    switch (hd) {
      case 32: return attention_lanes<S, 2>(a);
      case 64: return attention_lanes<S, 4>(a);
      case 128: return attention_lanes<S, 8>(a);
      default: break;
    }
  }
  constexpr int kChunk = 8;
  const int G = a.group, n_states = a.rows * G;
  float m[kMaxAttnStates], l[kMaxAttnStates], alpha[kMaxAttnStates];
  alignas(64) float e[kMaxAttnStates][kKeyBlock];
  auto q_of = [&](int s) { return a.q + (s / G) * a.q_stride + static_cast<size_t>(s % G) * hd; };
  auto out_of = [&](int s) { return a.out + (s / G) * a.out_stride + static_cast<size_t>(s % G) * hd; };
  for (int s = 0; s < n_states; ++s) {
    m[s] = -INFINITY;
    l[s] = 0.0f;
    float* out = out_of(s);
    for (int i = 0; i < hd; ++i) out[i] = 0.0f;
  }
  const int n_last = a.pos + a.rows;  // keys of the last token
  for (int b0 = 0; b0 < n_last; b0 += kKeyBlock) {
    auto nb_of = [&](int s) { return std::max(0, std::min(kKeyBlock, a.pos + s / G + 1 - b0)); };
    const int nb_max = nb_of(n_states - 1);
    int ks, vs;  // the rows as float32 (K16): the cache's, or a typed cache's converted
    const float* kb = key_rows<S>(a, b0, nb_max, ks);
    const float* vb = value_rows<S>(a, b0, nb_max, vs);
    const uint8_t* mb = a.mask != nullptr ? a.mask + b0 : nullptr;  // this block's mask bytes (L3)
    for (int j0 = 0; j0 < nb_max; j0 += kChunk)
      for (int s = 0; s < n_states; ++s) {
        const int j1 = std::min(j0 + kChunk, nb_of(s));
        if (j1 > j0) scores<S>(q_of(s), kb, ks, hd, e[s], j0, j1);
      }
    for (int s = 0; s < n_states;) {  // runs of up to 4 states with the same key count
      const int nb = nb_of(s);
      int u = 1;
      while (u < 4 && s + u < n_states && nb_of(s + u) == nb) ++u;
      if (nb > 0) {
        float* rows[4];
        for (int x = 0; x < 4; ++x) rows[x] = e[s + std::min(x, u - 1)];
        switch (u) {
          case 1: softmax_block<S, 1>(rows, nb, a.scale, m + s, l + s, alpha + s, mb); break;
          case 2: softmax_block<S, 2>(rows, nb, a.scale, m + s, l + s, alpha + s, mb); break;
          case 3: softmax_block<S, 3>(rows, nb, a.scale, m + s, l + s, alpha + s, mb); break;
          default: softmax_block<S, 4>(rows, nb, a.scale, m + s, l + s, alpha + s, mb); break;
        }
      }
      s += u;
    }
    accumulate_item<S>(n_states, nb_of, out_of, vb, vs, &e[0][0], kKeyBlock, 1, alpha, hd);
  }
  for (int s = 0; s < n_states; ++s) {
    float* out = out_of(s);
    const float lv = l[s];
    int i = 0;
    const typename S::V vl = S::set1(lv);
    for (; i + kLanes <= hd; i += kLanes) S::store(out + i, S::div(S::load(out + i), vl));
    for (; i < hd; ++i) out[i] = out[i] / lv;
  }
}


// ---- decode attention split over key blocks (K4: the same operations per state, K8)
//
// One decode item (rows == 1, no mask, head_dim in kAttentionPathHeadDims, group <= kRun) in
// three phases, so that its key blocks can be spread over threads: (1) per block, the scaled
// scores and the block max mb (steps 1-2); (2) per block, with the running max m' of blocks
// 0..b (split_running_maxes of the mb, the same compares as the serial path, formed once between
// the phases), e_p = exp(s_p - m'), the block's own l_b and acc_b from +0 (steps 3-5 before the
// fold); (3) per state in block order, with the same m', alpha = exp(m - m'), l = fma(l, alpha,
// l_b), acc = fma(acc, alpha, acc_b), then acc / l. Every operation and operand is the serial
// path's; only when each runs changes.
// Layouts, for n_blocks = split_blocks(a) (kernels.hpp): s (group, n_blocks * kKeyBlock),
// mb, mr and lb (group, n_blocks), accb (group, n_blocks, head_dim). The cache rows come as a
// row view (kv_rows_impl.hpp with_row_view, K16): f32 and f16 read in place.

template <class S>
void attention_split_scores(const AttnArgs& a, int b0, int b1, float* s, float* mb) {
  const int G = a.group, nbk = split_blocks(a), n_keys = a.pos + 1;
  const size_t ss = static_cast<size_t>(nbk) * kKeyBlock;
  for (int b = b0; b < b1; ++b) {
    float m[kDecodeHeads];  // the heads share each key load and run their max chains side by side
    const int k0 = b * kKeyBlock, nb = std::min(kKeyBlock, n_keys - k0);
    with_row_view<S, false>(a, k0, nb, [&](const auto& kb) { decode_block_scores<S>(a, kb, nb, s + k0, ss, m); });  // K16
    for (int h = 0; h < G; ++h) mb[h * nbk + b] = m[h];
  }
}

// Step 5 without the fold for u <= kRun states of one block: acc_b to out[x] (C lane sets), the
// value rows a row view read in place (K16).
template <class S, int C, class R>
void split_accumulate(int u, float* const* out, const R& vb, const float* const* e, int nb) {
  const float unused[kRun] = {};
  auto row = [&](int j, int c) { return vb.lanes(j, c); };
  switch (u) {
    case 1: return accumulate_rows<S, 1, C, false>(out, row, e, nb, unused, 1);
    case 2: return accumulate_rows<S, 2, C, false>(out, row, e, nb, unused, 1);
    case 3: return accumulate_rows<S, 3, C, false>(out, row, e, nb, unused, 1);
    case 4: return accumulate_rows<S, 4, C, false>(out, row, e, nb, unused, 1);
    case 5: return accumulate_rows<S, 5, C, false>(out, row, e, nb, unused, 1);
    default: return accumulate_rows<S, 6, C, false>(out, row, e, nb, unused, 1);
  }
}

template <class S>
void attention_split_values(const AttnArgs& a, int b0, int b1, float* s, const float* mr, float* lb, float* accb) {
  const int hd = a.head_dim, G = a.group, nbk = split_blocks(a), n_keys = a.pos + 1;
  const size_t ss = static_cast<size_t>(nbk) * kKeyBlock;
  for (int b = b0; b < b1; ++b) {
    const int k0 = b * kKeyBlock, nb = std::min(kKeyBlock, n_keys - k0);
    float* outs[kRun] = {};
    const float* es[kRun] = {};
    for (int h = 0; h < G; ++h) {
      const float m_new = mr[h * nbk + b];
      float* e = s + h * ss + k0;
      int j = 0;
      const typename S::V vm = S::set1(m_new);
      for (; j + kLanes <= nb; j += kLanes) S::store(e + j, S::exp(S::sub(S::load(e + j), vm)));
      for (; j < nb; ++j) e[j] = akv::exp(e[j] - m_new);
      outs[h] = accb + (static_cast<size_t>(h) * nbk + b) * hd;
      es[h] = e;
    }
    float l[kDecodeHeads];  // the heads' l_b chains side by side
    decode_block_sums(G, es, nb, l);
    for (int h = 0; h < G; ++h) lb[h * nbk + b] = l[h];
    with_row_view<S, true>(a, k0, nb, [&](const auto& vb) {  // K16
      for (int h0 = 0; h0 < G;) {  // as accumulate_states: the runs share each v_p load
        const int u = hd == 128 ? std::min(2, G - h0) : (hd == 64 && S::kTileBudget < 24) ? std::min(4, G - h0) : G - h0;
        switch (hd) {
          case 32: split_accumulate<S, 2>(u, outs + h0, vb, es + h0, nb); break;
          case 64: split_accumulate<S, 4>(u, outs + h0, vb, es + h0, nb); break;
          default: split_accumulate<S, 8>(u, outs + h0, vb, es + h0, nb); break;  // 128: u <= 2
        }
        h0 += u;
      }
    });
  }
}

template <class S>
void attention_split_fold(const AttnArgs& a, const float* mr, const float* lb, const float* accb) {
  const int hd = a.head_dim, G = a.group, nbk = split_blocks(a);
  for (int h = 0; h < G; ++h) {
    float* out = a.out + static_cast<size_t>(h) * hd;
    for (int i = 0; i < hd; ++i) out[i] = 0.0f;
    float m = -INFINITY, l = 0.0f;
    for (int b = 0; b < nbk; ++b) {
      const float m_new = mr[h * nbk + b];
      const float alpha = akv::exp(m - m_new);
      m = m_new;
      l = std::fma(l, alpha, lb[h * nbk + b]);
      const float* ab = accb + (static_cast<size_t>(h) * nbk + b) * hd;
      const typename S::V va = S::set1(alpha);
      for (int i = 0; i < hd; i += kLanes) S::store(out + i, S::fma(S::load(out + i), va, S::load(ab + i)));
    }
    const typename S::V vl = S::set1(l);
    for (int i = 0; i < hd; i += kLanes) S::store(out + i, S::div(S::load(out + i), vl));
  }
}

}  // namespace akv::cpu::impl
