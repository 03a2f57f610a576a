#include "leakage/approx_evict.hpp"

#include <string>
#include <vector>

#include "reference/error.hpp"

namespace akv {

EvictStats evict_under(Session& s, std::span<const SpanId> ids, EvictPolicy policy) {
  if (policy == EvictPolicy::kExact) return s.evict(ids);
  const std::vector<SpanInfo> named = s.spans_to_evict(ids);  // cache order
  EvictStats st;
  st.truncated_at = named.front().start;
  if (policy == EvictPolicy::kKeep) return st;  // L2
  for (const SpanInfo& n : named) st.tokens_evicted += n.length;
  if (policy == EvictPolicy::kMask) {  // L3: entries, positions and the span table stay
    s.evict_in_place(ids, Session::EvictedRows::kKept, [&](KVCache& c) {
      for (const SpanInfo& n : named) c.mask_range(n.start, n.start + n.length);
    });
    return st;
  }
  // L4 re-rotates every layer's keys with one table: a model whose sliding layers have their own
  // (spec/model.md M19) is refused by name rather than re-rotated with the wrong one.
  if (s.model().rope_local)
    throw Error(ErrorCode::kBadInput, "policy kshift: architecture '" + arch_label(s.model().config) +
                                          "' has a second RoPE table for its sliding layers (spec/model.md M19); kshift re-rotates with one");
  // L4 rotates float32 keys in place; a typed cache (spec/state.md S5) would need each moved key
  // decoded, rotated and rounded again, which is no engine's K-shift: refused by name.
  if (s.kv_type() != KvType::kF32)
    throw Error(ErrorCode::kBadInput, std::string("policy kshift: the cache is ") + kv_type_name(s.kv_type()) +
                                          "; kshift re-rotates float32 keys (--kv-type f32, or policy exact, mask or keep)");
  // L4: last named span first, so every shift_out sees the starts it was given.
  const RopeTable& rope = *s.model().rope;
  s.evict_in_place(ids, Session::EvictedRows::kDropped, [&](KVCache& c) {
    for (size_t i = named.size(); i-- > 0;) shift_out(c, named[i].start, named[i].start + named[i].length, rope);
  });
  return st;
}

}  // namespace akv
