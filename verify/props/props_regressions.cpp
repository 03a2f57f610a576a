// Fixed patterns from public bug reports in other engines, with drawn token values and
// weights (spec/properties.md "Regression patterns"):
//  - llama.cpp #3825 / PR #3835: two KV shifts before the next decode kept only the last
//    delta; here two evictions before the next append must compose.
//  - llama.cpp #12160 / PR #12161: cache reuse of `a b c d e f g h j` for the prompt
//    `a b e f h j` removed the wrong cells after the first shift.
//  - vLLM #33123 / PR #34046 and #5543: a prefix-cache hit computes the suffix with another
//    M than the cold prefill and gets other bits; here N tokens at once vs N-1 then one
//    decode step, and 512 tokens in chunks of 64 vs one chunk.
#include "verify/props/bits.hpp"
#include "verify/props/draw.hpp"
#include "verify/props/fixture.hpp"
#include "verify/props/registry.hpp"

namespace akv::prop {

namespace {

// Spans of 1..max tokens, drawn; `names` of them.
gen::GenConversation lettered(size_t names, size_t max_len) {
  gen::GenConversation c;
  for (size_t i = 0; i < names; ++i) {
    const size_t n = *rc::gen::inRange<size_t>(1, max_len + 1);
    c.spans.push_back({gen::Role::kUser, *rc::gen::container<std::vector<Token>>(n, gen::token())});
  }
  return c;
}

gen::ModelChoice tiny_model() { return {"tiny", *rc::gen::inRange<uint64_t>(1, 1001)}; }

void two_evictions_compose(const Context& ctx) {
  const gen::ModelChoice mc = tiny_model();
  const gen::GenConversation c = lettered(*rc::gen::inRange<size_t>(3, 9), 24);
  const size_t n = c.spans.size();
  const size_t first = *rc::gen::inRange<size_t>(0, n - 1);
  const size_t second = *rc::gen::inRange<size_t>(first + 1, n);
  note_case({mc, c, {first, second}, "two evictions, then an append: positions add up, no token lost", {}});
  auto model = model_for(mc);
  auto b = backend_for(ctx.backend, model), bn = backend_for(ctx.backend, model);
  Session s(*b), never(*bn);
  build(s, c);
  build(never, c, {first, second});
  const EvictStats a = s.evict(static_cast<SpanId>(second));
  const EvictStats z = s.evict(static_cast<SpanId>(first));
  RC_ASSERT(a.truncated_at >= z.truncated_at);
  RC_ASSERT(s.size() == c.total_tokens() - c.spans[first].tokens.size() - c.spans[second].tokens.size());
  const std::vector<Token> next = *rc::gen::container<std::vector<Token>>(*rc::gen::inRange<size_t>(1, 9), gen::token());
  RC_ASSERT(same_bits(s.append(n, next), never.append(n, next)));
  RC_ASSERT(state_diff(s, never) == std::string());
  // The positions add up: every live span starts where the previous one ends.
  size_t at = 0;
  for (const SpanInfo& sp : s.spans()) {
    RC_ASSERT(sp.start == at);
    at += sp.length;
  }
  RC_ASSERT(at == s.size());
}

void interior_removals(const Context& ctx) {
  // a b c d e f g h j -> a b e f h j: c, d and g go (two interior removals).
  const gen::ModelChoice mc = tiny_model();
  const gen::GenConversation c = lettered(9, 16);
  const std::vector<size_t> gone = {2, 3, 6};
  const bool together = *rc::gen::arbitrary<bool>();
  note_case({mc, c, gone, "a b c d e f g h j -> a b e f h j equals a fresh build of the new prompt", {}});
  RC_TAG(together ? "one request" : "two requests");
  auto model = model_for(mc);
  auto b = backend_for(ctx.backend, model), bn = backend_for(ctx.backend, model);
  Session s(*b), fresh(*bn);
  build(s, c);
  build(fresh, c, gone);
  if (together) {
    s.evict(std::vector<SpanId>{2, 3, 6});
  } else {
    s.evict(std::vector<SpanId>{2, 3});
    s.evict(SpanId{6});
  }
  RC_ASSERT(state_diff(s, fresh) == std::string());
}

void decode_step_equals_batch(const Context& ctx) {
  const gen::ModelChoice mc = tiny_model();
  const size_t n = *rc::gen::inRange<size_t>(2, 257);
  const std::vector<Token> toks = *rc::gen::container<std::vector<Token>>(n, gen::token());
  gen::GenConversation c;
  c.spans.push_back({gen::Role::kUser, toks});
  note_case({mc, c, {}, "N tokens in one append vs N-1 then one decode step", {}});
  auto model = model_for(mc);
  auto b1 = backend_for(ctx.backend, model), b2 = backend_for(ctx.backend, model);
  Session batch(*b1), step(*b2);
  const std::vector<float> all = batch.append(0, toks);
  step.append(0, std::vector<Token>(toks.begin(), toks.end() - 1));
  const std::vector<float> last = step.append(0, std::vector<Token>{toks.back()});
  const size_t vocab = static_cast<size_t>(model->config.vocab);
  RC_ASSERT(same_bits(last, std::vector<float>(all.end() - static_cast<std::ptrdiff_t>(vocab), all.end())));
  RC_ASSERT(state_diff(batch, step) == std::string());
}

void chunks_of_64(const Context& ctx) {
  const gen::ModelChoice mc = tiny_model();
  const std::vector<Token> toks = *rc::gen::container<std::vector<Token>>(512, gen::token());
  gen::GenConversation c;
  c.spans.push_back({gen::Role::kUser, toks});
  note_case({mc, c, {}, "512 tokens in chunks of 64 vs one chunk", {}});
  auto model = model_for(mc);
  auto b = backend_for(ctx.backend, model);
  const check::Run one = run_chunked(*b, toks, {512}), chunked = run_chunked(*b, toks, std::vector<size_t>(8, 64));
  RC_ASSERT(cache_diff(one.cache, chunked.cache) == std::string());
  RC_ASSERT(same_bits(one.logits, chunked.logits));
}

}  // namespace

void add_regression_properties(std::vector<PropertyDef>& v) {
  v.push_back({"E1_PropRegression", "TwoEvictionsBeforeAppendCompose",
               "llama.cpp #3825: two evictions before the next append compose", two_evictions_compose});
  v.push_back({"E1_PropRegression", "TwoInteriorRemovals",
               "llama.cpp #12160: a b c d e f g h j -> a b e f h j equals a fresh build", interior_removals});
  v.push_back({"I1_PropRegression", "DecodeStepEqualsBatch",
               "vLLM #33123: N tokens at once equal N-1 then one decode step", decode_step_equals_batch});
  v.push_back({"I1_PropRegression", "ChunksOf64EqualOneChunk", "vLLM #34046: 512 tokens in chunks of 64 equal one chunk",
               chunks_of_64});
}

}  // namespace akv::prop
