// E1 (spec/theorems.md): evict(S) on P‖S‖X leaves the state of a never-shown P‖X, bit for bit,
// for every shape of eviction request, and the logits produced afterwards agree too.
#include <algorithm>
#include <cstring>

#include "reference/error.hpp"
#include "runtime/digest.hpp"
#include "verify/props/draw.hpp"
#include "verify/props/fixture.hpp"
#include "verify/props/registry.hpp"

namespace akv::prop {

namespace {

// Builds P‖S‖X, evicts `req`, and checks the result against the never-shown session, then
// appends one more span to both and checks the new logits and state again.
void check_request(const Context& ctx, const gen::ModelChoice& mc, const gen::GenConversation& conv,
                   const gen::EvictRequest& req) {
  note_case({mc, conv, req.spans, "E1: evict the spans at once, compare with a never-shown build", {}});
  RC_TAG(gen::request_kind_name(req.kind));
  auto model = model_for(mc);
  auto bp = backend_for(ctx.backend, model), bn = backend_for(ctx.backend, model);
  Session poisoned(*bp, mc.kv), never(*bn, mc.kv);
  build(poisoned, conv);
  build(never, conv, req.spans);
  const std::vector<SpanId> ids = live_ids(conv, req.spans);
  if (ids.empty()) {
    // Only empty spans named: they never entered the session (spec/properties.md "Empty
    // spans"): the request is kUnknownSpan, the state unchanged, and already equal to never.
    RC_TAG("only empty spans named");
    const std::string before = session_state_sha256(poisoned);
    try {
      poisoned.evict(std::vector<SpanId>(req.spans.begin(), req.spans.end()));
      RC_FAIL("evicting an empty span was accepted");
    } catch (const Error& e) {
      RC_ASSERT(e.code() == ErrorCode::kUnknownSpan);
    }
    RC_ASSERT(session_state_sha256(poisoned) == before);
  } else {
    if (ids.size() == conv.nonempty().size()) RC_TAG("every span evicted");
    if (ids.size() < req.spans.size()) RC_TAG("empty spans named too");
    poisoned.evict(ids);
  }
  const std::string d = state_diff(poisoned, never);
  RC_ASSERT(d == std::string());
  if (never.spans().empty()) RC_ASSERT_THROWS_AS((void)poisoned.logits(), Error);  // kEmptyCache, as never

  // Every logit produced afterwards: one more span, appended to both.
  const gen::GenSpan extra = *gen::span(16, ctx.profile.vocab);
  if (extra.tokens.empty()) return;
  const SpanId next = conv.spans.size();
  gen::GenConversation with_extra = conv;
  with_extra.spans.push_back(extra);
  note_case({mc, with_extra, req.spans, "E1: evict the spans at once, compare with a never-shown build, then append the last span to both", {}});
  const std::vector<float> a = poisoned.append(next, extra.tokens), b = never.append(next, extra.tokens);
  RC_ASSERT(a.size() == b.size());
  RC_ASSERT(std::equal(a.begin(), a.end(), b.begin(), [](float x, float y) { return std::memcmp(&x, &y, sizeof x) == 0; }));
  RC_ASSERT(state_diff(poisoned, never) == std::string());
}

void requests(const Context& ctx) {
  const Drawn c = draw_case(ctx);
  check_request(ctx, c.model, c.conv, *gen::evict_request(c.conv));
}

void real_requests(const Context& ctx) {
  const Drawn c = draw_case(ctx, 1, true);
  check_request(ctx, c.model, c.conv, *gen::evict_request(c.conv));
}

// Evicting the spans one call each, in a drawn order, equals evicting them in one call,
// and both equal never.
void one_at_a_time(const Context& ctx) {
  const Drawn c = draw_case(ctx, 2);
  // The filter owns its copy: RapidCheck re-runs it while shrinking, after this frame is gone.
  const gen::EvictRequest req = *rc::gen::suchThat(gen::evict_request(c.conv), [conv = c.conv](const gen::EvictRequest& r) {
    return live_ids(conv, r.spans).size() >= 2;
  });
  const std::vector<SpanId> ids = live_ids(c.conv, req.spans);
  const std::vector<size_t> order = *gen::permutation(std::vector<size_t>(ids.begin(), ids.end()));
  note_case({c.model, c.conv, req.spans, "E1: evict one at a time in a drawn order vs together vs never", {}});
  auto model = model_for(c.model);
  auto b1 = backend_for(ctx.backend, model), b2 = backend_for(ctx.backend, model), b3 = backend_for(ctx.backend, model);
  Session single(*b1, c.model.kv), together(*b2, c.model.kv), never(*b3, c.model.kv);
  build(single, c.conv);
  build(together, c.conv);
  build(never, c.conv, req.spans);
  for (size_t id : order) single.evict(static_cast<SpanId>(id));
  together.evict(ids);
  RC_ASSERT(state_diff(single, together) == std::string());
  RC_ASSERT(state_diff(single, never) == std::string());
}

}  // namespace

void add_e1_properties(std::vector<PropertyDef>& v) {
  v.push_back({"E1_PropEvictEqualsNever", "Requests",
               "evict(S) on P|S|X equals never-shown P|X for one, adjacent, non-adjacent, first, last, all, all-but-one spans",
               requests});
  v.push_back({"E1_PropEvictEqualsNever", "RealConversations",
               "the same on windows of the bundled real conversations", real_requests});
  v.push_back({"E1_PropEvictEqualsNever", "OneAtATimeAnyOrder",
               "evicting spans one at a time in any order equals evicting them together equals never", one_at_a_time});
}

}  // namespace akv::prop
