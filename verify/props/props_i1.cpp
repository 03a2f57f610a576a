// I1 (spec/theorems.md): a token's K, V and logits depend on the token sequence up to it and
// nothing else: not the chunking into calls, not scratch contents, not earlier work.
#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "optimized/cpu/kernels.hpp"
#include "reference/synthetic_spec.hpp"
#include "runtime/models.hpp"
#include "verify/props/bits.hpp"
#include "verify/props/draw.hpp"
#include "verify/props/fixture.hpp"
#include "verify/props/registry.hpp"

namespace akv::prop {

namespace {

// One call, one call per span, random cut points, token by token: same cache, same rows.
void chunkings(const Context& ctx) {
  const Drawn c = draw_case(ctx);
  const gen::Chunking cuts = *gen::chunking(c.conv, gen::ChunkKind::kRandomCuts);
  note_case({c.model, c.conv, {}, "I1: chunkings one-call / per-span / random cuts / token-by-token", {}});
  const std::vector<Token> toks = c.conv.tokens_without({});
  auto model = model_for(c.model);
  auto b = backend_for(ctx.backend, model);
  const check::Run one = run_chunked(*b, toks, gen::make_chunking(gen::ChunkKind::kOneCall, c.conv).lengths, c.model.kv);
  const KVCache& ref = one.cache;
  const std::vector<float>& ref_logits = one.logits;
  for (const gen::Chunking& ch : {gen::make_chunking(gen::ChunkKind::kPerSpan, c.conv), cuts,
                                  gen::make_chunking(gen::ChunkKind::kTokenByToken, c.conv)}) {
    auto fresh = backend_for(ctx.backend, model);
    const check::Run run = run_chunked(*fresh, toks, ch.lengths, c.model.kv);
    RC_ASSERT(cache_diff(run.cache, ref) == std::string());
    RC_ASSERT(same_bits(run.logits, ref_logits));
  }
  // Through a session, one append per span: the same cache and the last row as next logits.
  Session s(*b, c.model.kv);
  build(s, c.conv);
  RC_ASSERT(cache_diff(s.cache(), ref) == std::string());
  const size_t vocab = static_cast<size_t>(model->config.vocab);
  RC_ASSERT(same_bits(std::vector<float>(s.logits().begin(), s.logits().end()),
                      std::vector<float>(ref_logits.end() - static_cast<std::ptrdiff_t>(vocab), ref_logits.end())));
}

// Scratch filled with NaN, with a huge value, or left alone: the same bits.
void poisoned_scratch(const Context& ctx) {
  const Drawn c = draw_case(ctx);
  const gen::Chunking cuts = *gen::chunking(c.conv, gen::ChunkKind::kRandomCuts);
  note_case({c.model, c.conv, {}, "I1: scratch poisoned with NaN / 3e38 / untouched", {}});
  const std::vector<Token> toks = c.conv.tokens_without({});
  auto model = model_for(c.model);
  auto b0 = backend_for(ctx.backend, model);
  b0->set_scratch_poison(std::nullopt);
  const check::Run base = run_chunked(*b0, toks, cuts.lengths, c.model.kv);
  for (float poison : {std::numeric_limits<float>::quiet_NaN(), 3e38f, -0.0f}) {
    auto b = backend_for(ctx.backend, model);
    b->set_scratch_poison(poison);
    const check::Run run = run_chunked(*b, toks, cuts.lengths, c.model.kv);
    RC_ASSERT(cache_diff(run.cache, base.cache) == std::string());
    RC_ASSERT(same_bits(run.logits, base.logits));
  }
}

// A backend that first served an unrelated session, and then serves ours interleaved with
// it call by call, gives the bits of a fresh backend.
void earlier_work(const Context& ctx) {
  const Drawn c = draw_case(ctx);
  const gen::GenConversation other = *gen::conversation(ctx.profile, gen::budget_for(ctx.profile, c.model));
  note_case({c.model, c.conv, {}, "I1: after and interleaved with an unrelated session on the same backend", {}});
  auto model = model_for(c.model);
  auto fresh = backend_for(ctx.backend, model), shared = backend_for(ctx.backend, model);
  Session alone(*fresh, c.model.kv);
  build(alone, c.conv);
  // The unrelated sessions keep f32 caches: a typed session beside them shares nothing with them.
  Session before(*shared), mine(*shared, c.model.kv), beside(*shared);
  build(before, other);
  size_t j = 0;
  for (size_t i = 0; i < c.conv.spans.size(); ++i) {
    if (c.conv.spans[i].tokens.empty()) continue;
    mine.append(i, c.conv.spans[i].tokens);
    while (j < other.spans.size() && other.spans[j].tokens.empty()) ++j;
    if (j < other.spans.size()) beside.append(j, other.spans[j].tokens), ++j;
  }
  RC_ASSERT(state_diff(mine, alone) == std::string());
}

// Every decode path of the kernels' dispatch inside a whole model: per head dim of the
// dispatch list (kernels.hpp kAttentionCheckHeadDims) a drawn one-layer shape with that head
// dim (GQA groups 1-3) and 65-80 tokens, run token by token around both ends of the first key
// block (one decode in it, the last 1-3 past it: the cpu backend's split path at 2+ threads) at
// 1, 2 and 3 threads, against one call of all the tokens at 1 thread: the same cache and logit
// rows. The drawn shapes of the other properties reach a head dim about one case in 24 and a
// split decode seldom; every case here runs every path.
void decode_paths(const Context& ctx) {
  const bool threads = (ctx.knobs ? *ctx.knobs : backend_knobs(ctx.backend)).threads;
  const uint64_t seed = *rc::gen::inRange<uint64_t>(1, 1001);
  for (const int hd : cpu::kAttentionCheckHeadDims) {
    Config c = config_by_name("tiny");
    c.hidden = *rc::gen::inRange(4, 17);
    c.n_layers = 1;
    c.n_kv_heads = *rc::gen::inRange(1, 3);
    c.n_heads = c.n_kv_heads * *rc::gen::inRange(1, 4);
    c.head_dim = hd;
    c.ffn = *rc::gen::inRange(4, 25);
    const gen::ModelChoice mc{synthetic_spec(c), seed};
    const size_t first = *rc::gen::inRange<size_t>(1, cpu::kKeyBlock), last = *rc::gen::inRange<size_t>(1, 4);
    // At least one token for the middle prefill (a call of 0 tokens is bad input to run_chunked).
    const size_t n = *rc::gen::inRange<size_t>(std::max<size_t>(cpu::kKeyBlock + 1, first + 2 + last), cpu::kKeyBlock + 17);
    gen::GenConversation conv;
    conv.spans.push_back({gen::Role::kUser, *rc::gen::container<std::vector<Token>>(n, gen::token())});
    // prefill [0, first), decode `first`, prefill up to the last `last` tokens, decode each of them
    std::vector<size_t> lengths{first, 1, n - first - 1 - last};
    lengths.insert(lengths.end(), last, 1);
    note_case({mc, conv, {}, fmt::format("I1: head_dim {} token by token at {} and from {} (1, 2, 3 threads) vs one call", hd, first, n - last), {}});
    // Built for this case alone (model_for would keep every drawn shape, and its RoPE table rows, for
    // the whole process).
    const std::shared_ptr<const Model> model = load_model(mc.config, mc.seed).model;
    const check::Run one = run_chunked(*backend_at_threads(ctx.backend, model, 1), conv.spans[0].tokens, {n});
    for (const int t : threads ? std::vector<int>{1, 2, 3} : std::vector<int>{0}) {
      const check::Run run = run_chunked(*backend_at_threads(ctx.backend, model, t), conv.spans[0].tokens, lengths);
      const std::string where = fmt::format("head_dim {}, decodes at {} and from {}{}", hd, first, n - last,
                                            t > 0 ? fmt::format(" at {} thread{}", t, t > 1 ? "s" : "") : "");
      const std::string cache = cache_diff(run.cache, one.cache);
      if (!cache.empty()) RC_FAIL(where + " vs one call: " + cache);
      if (!same_bits(run.logits, one.logits)) RC_FAIL(where + " vs one call: logit rows differ");
    }
  }
}

}  // namespace

void add_i1_properties(std::vector<PropertyDef>& v) {
  v.push_back({"I1_PropInvariance", "Chunkings",
               "one call, one call per span, random cuts and token by token give the same cache and logit rows", chunkings});
  v.push_back({"I1_PropInvariance", "PoisonedScratch", "results do not depend on scratch contents (NaN, 3e38, -0)",
               poisoned_scratch});
  v.push_back({"I1_PropInvariance", "DecodePaths",
               "every head dim of the dispatch list, decoded token by token in the first key block and past it at 1, 2 "
               "and 3 threads, equals one call",
               decode_paths});
  v.push_back({"I1_PropInvariance", "EarlierWork",
               "results do not depend on an unrelated session served before or interleaved on the same backend",
               earlier_work});
}

}  // namespace akv::prop
