// The approximate evictions production engines use (spec/leakage.md L1-L4): keep, mask and
// K-shift, run through the Session's two hooks for them (spans_to_evict, evict_in_place) so
// that only the policy differs from akv's exact eviction (O3, Session::evict).
#pragma once
#include <algorithm>
#include <cstddef>
#include <span>

#include "reference/kv_cache.hpp"
#include "reference/policy.hpp"
#include "reference/rope.hpp"
#include "reference/session.hpp"

namespace akv {

/// K-shift (L4), llama.cpp's seq_rm + seq_add: removes entries [begin, end) of every layer of
/// `c`, moves the later entries down by d = end - begin with their values' bytes unchanged,
/// and re-rotates each moved key by -d with row d of the one RoPE table: per head, for
/// i < head_dim/2, with c = cos_at(d)[i], s = sin_at(d)[i],
///   x0' = x0*c + x1*s;  x1' = x1*c - x0*s   (x0 = k[i], x1 = k[i + head_dim/2]),
/// each product rounded, then the add/sub rounded: no FMA. Nothing is recomputed; entries
/// [0, begin) are not touched; the moved entries get new write serials and their masks move
/// with them (KVCache::remove_edited). Preconditions: begin <= end <= size(),
/// d < rope.max_pos, head_dim == rope.head_dim.
template <class T>
void shift_out(KVCacheT<T>& c, size_t begin, size_t end, const RopeTable& rope) {
  if (begin >= end) return;
  const size_t n = c.size(), d = end - begin, moved = n - end, kvd = static_cast<size_t>(c.kv_dim());
  const int hd = rope.head_dim, half = hd / 2;
  const float* cs = rope.cos_at(static_cast<int>(d));
  const float* sn = rope.sin_at(static_cast<int>(d));
  for (int l = 0; l < c.n_layers(); ++l) {
    T* k = c.k(l);
    T* v = c.v(l);
    std::copy(k + end * kvd, k + n * kvd, k + begin * kvd);
    std::copy(v + end * kvd, v + n * kvd, v + begin * kvd);
    for (size_t p = begin; p < begin + moved; ++p)
      for (int h = 0; h < c.kv_dim() / hd; ++h) {
        T* x = k + p * kvd + static_cast<size_t>(h) * hd;
        for (int i = 0; i < half; ++i) {
          const T x0 = x[i], x1 = x[i + half], co = T(cs[i]), s = T(sn[i]);
          x[i] = x0 * co + x1 * s;
          x[i + half] = x1 * co - x0 * s;
        }
      }
  }
  c.remove_edited(begin, end, n - d);
}

/// Evicts the spans `ids` from `s` under `policy` (L1); the same errors as s.evict(ids)
/// (O6), session unchanged. kExact is s.evict(ids). kKeep changes nothing (L2). kMask keeps
/// the spans' entries, positions and span-table rows and masks them from every later query
/// (L3); the spans count as evicted (no append, no second eviction). kKShift removes the
/// spans' entries, last span first, each by shift_out (L4): later entries move down with
/// re-rotated keys and nothing is recomputed, so the kept per-span logits (S3) are those
/// computed before the eviction. Stats: truncated_at = the first named span's start,
/// tokens_evicted = their tokens (0 for kKeep), tokens_recomputed = 0 unless kExact.
EvictStats evict_under(Session& s, std::span<const SpanId> ids, EvictPolicy policy);

}  // namespace akv
