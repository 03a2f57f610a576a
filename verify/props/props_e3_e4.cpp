// E3 (prefix untouched) and E4 (cost = |X|), spec/theorems.md: an eviction never writes an
// entry before the first evicted span, and re-runs exactly the survivors after it.
#include <algorithm>

#include "verify/props/bits.hpp"
#include "verify/props/draw.hpp"
#include "verify/props/fixture.hpp"
#include "verify/props/registry.hpp"

namespace akv::prop {

namespace {

// The model's answer: start of the first evicted span, |S| and |X| for `req` on `conv`.
struct Expected {
  size_t first = 0, evicted = 0, survivors = 0;
};
Expected expected(const gen::GenConversation& conv, const std::vector<size_t>& req) {
  Expected e;
  bool cut = false;
  for (size_t i = 0; i < conv.spans.size(); ++i) {
    const size_t n = conv.spans[i].tokens.size();
    const bool doomed = std::binary_search(req.begin(), req.end(), i) && n > 0;
    if (doomed) cut = true, e.evicted += n;
    else if (cut) e.survivors += n;
    else e.first += n;
  }
  return e;
}

void prefix_untouched(const Context& ctx) {
  const Drawn c = draw_case(ctx);
  const gen::EvictRequest req = *gen::evict_request(c.conv);
  note_case({c.model, c.conv, req.spans, "E3: entries before the first evicted span keep their bytes, no re-write", {}});
  const std::vector<SpanId> ids = live_ids(c.conv, req.spans);
  RC_PRE(!ids.empty());
  auto model = model_for(c.model);
  auto b = backend_for(ctx.backend, model);
  Session s(*b, c.model.kv);
  build(s, c.conv);
  const Expected e = expected(c.conv, req.spans);
  const std::vector<unsigned char> before = prefix_bytes(s.cache(), e.first);
  const unsigned char* k0 = s.cache().k_bytes(0);
  const uint64_t written = s.cache().entries_written();
  const EvictStats st = s.evict(ids);
  RC_TAG(e.first == 0 ? "cut at 0" : "prefix kept");
  RC_ASSERT(st.truncated_at == e.first);
  RC_ASSERT(prefix_bytes(s.cache(), e.first) == before);
  // Writes: only the |X| survivors' entries were made again; none before the cut.
  RC_ASSERT(s.cache().entries_written() - written == e.survivors);
  RC_ASSERT(s.size() == e.first + e.survivors);
  if (e.survivors == 0 && e.first > 0) RC_ASSERT(s.cache().k_bytes(0) == k0);  // truncation alone moves no bytes
}

void cost_is_survivors(const Context& ctx) {
  const Drawn c = draw_case(ctx);
  const gen::EvictRequest req = *gen::evict_request(c.conv);
  note_case({c.model, c.conv, req.spans, "E4: tokens recomputed == |X|", {}});
  const std::vector<SpanId> ids = live_ids(c.conv, req.spans);
  RC_PRE(!ids.empty());
  auto model = model_for(c.model);
  auto b = backend_for(ctx.backend, model);
  Session s(*b, c.model.kv);
  build(s, c.conv);
  const Expected e = expected(c.conv, req.spans);
  const uint64_t counter = s.tokens_recomputed(), written = s.cache().entries_written();
  const EvictStats st = s.evict(ids);
  RC_ASSERT(st.tokens_recomputed == e.survivors);
  RC_ASSERT(st.tokens_evicted == e.evicted);
  RC_ASSERT(s.tokens_recomputed() - counter == e.survivors);
  RC_ASSERT(s.cache().entries_written() - written == e.survivors);
  RC_CLASSIFY(e.survivors == 0, "X empty");
}

}  // namespace

void add_e3_e4_properties(std::vector<PropertyDef>& v) {
  v.push_back({"E3_PropPrefixUntouched", "PrefixBytesAndWrites",
               "bytes before the first evicted span are unchanged and only |X| entries are written", prefix_untouched});
  v.push_back({"E4_PropCostIsSurvivors", "RecomputedEqualsX",
               "an eviction re-runs exactly |X| tokens: stats, session counter and cache write counter", cost_is_survivors});
}

}  // namespace akv::prop
