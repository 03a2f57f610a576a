// Errors (spec/operations.md, the errors clause): an invalid operation throws akv::Error
// with its code and leaves the session bitwise unchanged (session_state_sha256), and the
// session goes on to agree with a fresh build.
#include <algorithm>

#include "reference/error.hpp"
#include "runtime/digest.hpp"
#include "verify/props/draw.hpp"
#include "verify/props/fixture.hpp"
#include "verify/props/registry.hpp"

namespace akv::prop {

namespace {

enum class Bad {
  kEvictUnknown, kEvictEvicted, kEvictDuplicate, kEvictNone, kEvictMixed, kAppendEmpty, kAppendBadToken,
  kAppendNegativeToken, kAppendOverflow, kAppendEvicted, kAppendNotAtTail, kLogitsEmpty
};

const char* bad_name(Bad b) {
  static const char* n[] = {"evict unknown span", "evict evicted span", "evict duplicate ids", "evict no ids",
                            "evict live + evicted", "append no tokens", "append token >= vocab", "append token < 0",
                            "append past max_ctx", "append to evicted span", "append to non-tail span",
                            "logits of empty session"};
  return n[static_cast<int>(b)];
}

void invalid_operations(const Context& ctx) {
  const Drawn c = draw_case(ctx, 2);
  const std::vector<size_t> live = c.conv.nonempty();
  const size_t gone = *rc::gen::elementOf(live);  // evicted first, so "already evicted" exists
  const Bad bad = *rc::gen::element(Bad::kEvictUnknown, Bad::kEvictEvicted, Bad::kEvictDuplicate, Bad::kEvictNone,
                                    Bad::kEvictMixed, Bad::kAppendEmpty, Bad::kAppendBadToken, Bad::kAppendNegativeToken,
                                    Bad::kAppendOverflow, Bad::kAppendEvicted, Bad::kAppendNotAtTail, Bad::kLogitsEmpty);
  note_case({c.model, c.conv, {gone}, std::string("errors: after evicting one span, ") + bad_name(bad)});
  RC_TAG(bad_name(bad));
  auto model = model_for(c.model);
  auto b = backend_for(ctx.backend, model), bf = backend_for(ctx.backend, model);
  Session s(*b), empty(*bf);
  build(s, c.conv);
  s.evict(static_cast<SpanId>(gone));
  std::vector<SpanId> left;
  for (size_t i : live)
    if (i != gone) left.push_back(i);
  const SpanId fresh_id = c.conv.spans.size() + 7;
  const Token t = *gen::token();
  const int vocab = model->config.vocab;

  if (bad == Bad::kAppendNotAtTail) RC_PRE(left.size() >= 2);  // left[0] is then not the tail
  Session& target = bad == Bad::kLogitsEmpty ? empty : s;
  const std::string before = session_state_sha256(target);
  ErrorCode want{};
  bool threw = false;
  try {
    switch (bad) {
      case Bad::kEvictUnknown: want = ErrorCode::kUnknownSpan, s.evict(fresh_id); break;
      case Bad::kEvictEvicted: want = ErrorCode::kSpanEvicted, s.evict(static_cast<SpanId>(gone)); break;
      case Bad::kEvictDuplicate: want = ErrorCode::kDuplicateSpan, s.evict(std::vector<SpanId>{left[0], left[0]}); break;
      case Bad::kEvictNone: want = ErrorCode::kEmptyInput, s.evict(std::vector<SpanId>{}); break;
      case Bad::kEvictMixed: want = ErrorCode::kSpanEvicted, s.evict(std::vector<SpanId>{left[0], gone}); break;
      case Bad::kAppendEmpty: want = ErrorCode::kEmptyInput, s.append(fresh_id, std::vector<Token>{}); break;
      case Bad::kAppendBadToken: want = ErrorCode::kInvalidToken, s.append(fresh_id, std::vector<Token>{t, vocab + t, t}); break;
      case Bad::kAppendNegativeToken: want = ErrorCode::kInvalidToken, s.append(fresh_id, std::vector<Token>{t, -1 - t}); break;
      case Bad::kAppendOverflow:
        want = ErrorCode::kContextOverflow;
        s.append(fresh_id, std::vector<Token>(static_cast<size_t>(model->config.max_ctx) - s.size() + 1, t));
        break;
      case Bad::kAppendEvicted: want = ErrorCode::kSpanEvicted, s.append(static_cast<SpanId>(gone), std::vector<Token>{t}); break;
      case Bad::kAppendNotAtTail:
        want = ErrorCode::kSpanNotAtTail;
        s.append(left[0], std::vector<Token>{t});
        break;
      case Bad::kLogitsEmpty: want = ErrorCode::kEmptyCache, (void)empty.logits(); break;
    }
  } catch (const Error& e) {
    threw = true;
    RC_ASSERT(e.code() == want);
  }
  RC_ASSERT(threw);
  RC_ASSERT(session_state_sha256(target) == before);

  // Still a working session: it agrees with a fresh build after one more span.
  if (bad == Bad::kLogitsEmpty) return;
  auto bn = backend_for(ctx.backend, model);
  Session never(*bn);
  build(never, c.conv, {gone});
  s.append(fresh_id, std::vector<Token>{t});
  never.append(fresh_id, std::vector<Token>{t});
  RC_ASSERT(state_diff(s, never) == std::string());
}

}  // namespace

void add_error_properties(std::vector<PropertyDef>& v) {
  v.push_back({"O6_PropErrorsLeaveStateUnchanged", "InvalidOperations",
               "unknown/evicted/duplicate spans, empty input, bad tokens and overflow throw and change nothing",
               invalid_operations});
}

}  // namespace akv::prop
