#include "verify/gen/gen.hpp"

#include <algorithm>

#include "optimized/cpu/kernels.hpp"
#include "reference/synthetic_spec.hpp"
#include "verify/gen/real.hpp"

namespace akv::gen {

rc::Gen<Token> token(int vocab) { return rc::gen::inRange<Token>(0, vocab); }

rc::Gen<GenSpan> span(size_t max_len, int vocab) {
  const size_t mid = std::min<size_t>(max_len, 64);
  rc::Gen<size_t> len = rc::gen::weightedOneOf<size_t>({
      {1, rc::gen::just<size_t>(0)},
      {4, rc::gen::inRange<size_t>(std::min<size_t>(1, max_len), std::min<size_t>(8, max_len) + 1)},
      {3, rc::gen::inRange<size_t>(std::min<size_t>(1, max_len), mid + 1)},
      {2, rc::gen::inRange<size_t>(std::min<size_t>(1, max_len), max_len + 1)},
  });
  rc::Gen<Role> role = rc::gen::element(Role::kUser, Role::kAssistant, Role::kTool, Role::kSystem);
  return rc::gen::apply(
      [](Role r, std::vector<Token> t) { return GenSpan{r, std::move(t)}; }, role,
      rc::gen::mapcat(len, [vocab](size_t n) { return rc::gen::container<std::vector<Token>>(n, token(vocab)); }));
}

namespace {
GenConversation trim(GenConversation c, size_t budget) {
  size_t used = 0;
  for (size_t i = 0; i < c.spans.size(); ++i) {
    auto& t = c.spans[i].tokens;
    if (used + t.size() > budget) {
      t.resize(budget - used);
      c.spans.resize(i + 1);
      break;
    }
    used += t.size();
  }
  return c;
}
}  // namespace

rc::Gen<GenConversation> conversation(const Profile& p, size_t budget, size_t min_nonempty) {
  const rc::Gen<GenSpan> one = span(p.max_span_len, p.vocab);
  const int vocab = p.vocab;
  const size_t max_spans = p.max_spans;
  auto spans = rc::gen::withSize([=](int size) {
    const int k = 1 + static_cast<int>((static_cast<size_t>(std::max(size, 0)) * (max_spans - 1)) / 100);
    return rc::gen::resize(std::min<int>(k, static_cast<int>(max_spans)),
                           rc::gen::nonEmpty(rc::gen::container<std::vector<GenSpan>>(one)));
  });
  auto trimmed = rc::gen::map(spans, [=](std::vector<GenSpan> s) { return trim(GenConversation{std::move(s)}, budget); });
  // Padding a last span up to the budget is how the long profile reaches the whole context;
  // uniform span lengths alone almost never sum to it.
  const int fill = p.fill_per_mille;
  auto conv = fill <= 0 ? trimmed : rc::gen::mapcat(trimmed, [=](GenConversation c) {
    size_t used = 0;
    for (const auto& s : c.spans) used += s.tokens.size();
    const size_t rest = budget > used ? budget - used : 0;
    auto pad = rc::gen::weightedOneOf<size_t>({{static_cast<size_t>(1000 - fill), rc::gen::just<size_t>(0)},
                                               {static_cast<size_t>(fill), rc::gen::just<size_t>(size_t{rest})}});
    return rc::gen::map(rc::gen::mapcat(pad, [vocab](size_t n) { return rc::gen::container<std::vector<Token>>(n, token(vocab)); }),
                        [c](std::vector<Token> t) {
                          GenConversation out = c;
                          if (!t.empty()) out.spans.push_back(GenSpan{Role::kTool, std::move(t)});
                          return out;
                        });
  });
  return rc::gen::suchThat(conv, [=](const GenConversation& c) { return c.nonempty().size() >= min_nonempty; });
}

rc::Gen<std::string> synthetic_shape() { return synthetic_shape({}); }

rc::Gen<std::string> synthetic_shape(std::vector<int> head_dims) {
  return rc::gen::exec([head_dims]() {
    Config c = config_by_name("tiny");
    c.hidden = *rc::gen::inRange(4, 65);
    c.n_layers = *rc::gen::inRange(1, 4);
    c.n_kv_heads = *rc::gen::inRange(1, 4);
    c.n_heads = c.n_kv_heads * *rc::gen::inRange(1, 4);
    // Small even head dims, and one in four of the head dims the cpu kernels dispatch on
    // (kernels.hpp: 128 included), so every attention path runs inside a whole model.
    c.head_dim = !head_dims.empty() ? *rc::gen::elementOf(head_dims) : *rc::gen::weightedOneOf<int>(
        {{3, rc::gen::map(rc::gen::inRange(1, 11), [](int h) { return 2 * h; })},
         {1, rc::gen::elementOf(std::vector<int>(cpu::kAttentionCheckHeadDims.begin(), cpu::kAttentionCheckHeadDims.end()))}});
    c.ffn = *rc::gen::inRange(4, 97);
    c.vocab = *rc::gen::inRange(288, 321);
    return synthetic_spec(c);
  });
}

rc::Gen<ModelChoice> model_choice(const Profile& p) {
  if (!p.model.empty()) return rc::gen::just(ModelChoice{p.model, 1});
  const uint64_t max_seed = p.max_seed;
  auto seed = rc::gen::weightedOneOf<uint64_t>({{1, rc::gen::just<uint64_t>(1)}, {3, rc::gen::inRange<uint64_t>(1, max_seed + 1)}});
  const int small = std::max(p.small_per_mille, 0), shape = std::max(p.shape_per_mille, 0);
  auto config = rc::gen::weightedOneOf<std::string>({{static_cast<size_t>(std::max(1000 - small - shape, 0)), rc::gen::just<std::string>("tiny")},
                                                     {static_cast<size_t>(small), rc::gen::just<std::string>("small")},
                                                     {static_cast<size_t>(shape), synthetic_shape()}});
  return rc::gen::apply([](std::string c, uint64_t s) { return ModelChoice{std::move(c), s}; }, config, seed);
}

rc::Gen<ModelChoice> model_choice_typed(const Profile& p, const std::vector<KvType>& types) {
  const Profile pc = p;
  return rc::gen::mapcat(rc::gen::elementOf(types), [pc](KvType t) -> rc::Gen<ModelChoice> {
    if (t != KvType::kQ8_0 || !pc.model.empty())
      return rc::gen::map(model_choice(pc), [t](ModelChoice m) { return m.kv = t, m; });
    std::vector<int> dims;  // the cpu kernels' head dims that hold whole Q8_0 blocks
    for (int h : cpu::kAttentionPathHeadDims)
      if (h % kKvQ8Block == 0) dims.push_back(h);
    auto seed = rc::gen::inRange<uint64_t>(1, pc.max_seed + 1);
    return rc::gen::apply([t](std::string c, uint64_t s) { return ModelChoice{std::move(c), s, t}; }, synthetic_shape(dims), seed);
  });
}

size_t budget_for(const Profile& p, const ModelChoice& m) {
  if (!p.model.empty()) return p.max_total;
  if (m.config == "small") return p.small_max_total;
  if (is_synthetic_spec(m.config)) return p.shape_max_total;
  return p.max_total;
}

size_t state_budget_for(const Profile& p, const ModelChoice& m) {
  if (!p.model.empty()) return p.state_max_total;
  if (m.config == "small") return p.small_max_total;
  if (is_synthetic_spec(m.config)) return std::min(p.shape_max_total, p.state_max_total);
  return p.state_max_total;
}

rc::Gen<BackendDraw> backend_draw(const Profile& p, const BackendKnobs& k) {
  const int lo = p.min_threads, hi = p.max_threads, vocab = p.vocab;
  return rc::gen::exec([=]() {
    BackendDraw d;
    if (k.threads) d.threads = *rc::gen::inRange(lo, hi + 1);
    if (!k.isas.empty()) d.isa = *rc::gen::elementOf(k.isas);
    d.scratch = *rc::gen::element(ScratchKind::kNaN, ScratchKind::kStale);
    if (d.scratch == ScratchKind::kStale)
      d.warmup = *rc::gen::container<std::vector<Token>>(*rc::gen::inRange(1, 17), token(vocab));
    return d;
  });
}

rc::Gen<BackendDraws> backend_draws(const Profile& p, const BackendKnobs& k) {
  return rc::gen::map(rc::gen::container<std::vector<BackendDraw>>(4, backend_draw(p, k)),
                      [](std::vector<BackendDraw> v) { return BackendDraws{std::move(v)}; });
}

rc::Gen<GenConversation> real_conversation(const Profile& p, size_t budget) {
  const std::vector<GenConversation>& all = real_conversations();
  if (all.empty()) return conversation(p, budget);
  const size_t cap = std::max<size_t>(p.max_span_len, 2);
  return rc::gen::exec([=, &all]() {
    const GenConversation& src = all[*rc::gen::inRange<size_t>(0, all.size())];
    const size_t first = *rc::gen::inRange<size_t>(0, src.spans.size());
    const size_t count = *rc::gen::inRange<size_t>(1, std::min(src.spans.size() - first, p.max_spans) + 1);
    GenConversation c;
    size_t used = 0;
    for (size_t i = first; i < first + count && used < budget; ++i) {
      GenSpan s = src.spans[i];
      if (s.tokens.size() > cap) {
        const Token end = s.tokens.back();
        s.tokens.resize(cap - 1);
        s.tokens.push_back(end);
      }
      if (used + s.tokens.size() > budget) s.tokens.resize(budget - used);
      used += s.tokens.size();
      c.spans.push_back(std::move(s));
    }
    return c;
  });
}

namespace {
std::vector<size_t> iota(size_t from, size_t to) {
  std::vector<size_t> v;
  for (size_t i = from; i < to; ++i) v.push_back(i);
  return v;
}
}  // namespace

rc::Gen<EvictRequest> evict_request(const GenConversation& conv) {
  const size_t n = conv.spans.size();
  return rc::gen::exec([n]() {
    RequestKind kind = *rc::gen::element(RequestKind::kOne, RequestKind::kAdjacent, RequestKind::kNonAdjacent, RequestKind::kFirst,
                                         RequestKind::kLast, RequestKind::kAll, RequestKind::kAllButOne, RequestKind::kAny);
    if ((kind == RequestKind::kAdjacent || kind == RequestKind::kAllButOne) && n < 2) kind = RequestKind::kOne;
    if (kind == RequestKind::kNonAdjacent && n < 3) kind = RequestKind::kAny;
    EvictRequest r{kind, {}};
    switch (kind) {
      case RequestKind::kOne: r.spans = {*rc::gen::inRange<size_t>(0, n)}; break;
      case RequestKind::kFirst: r.spans = {0}; break;
      case RequestKind::kLast: r.spans = {n - 1}; break;
      case RequestKind::kAll: r.spans = iota(0, n); break;
      case RequestKind::kAdjacent: {
        const size_t start = *rc::gen::inRange<size_t>(0, n - 1);
        const size_t len = *rc::gen::inRange<size_t>(2, n - start + 1);
        r.spans = iota(start, start + len);
        break;
      }
      case RequestKind::kAllButOne: {
        const size_t keep = *rc::gen::inRange<size_t>(0, n);
        for (size_t i = 0; i < n; ++i)
          if (i != keep) r.spans.push_back(i);
        break;
      }
      case RequestKind::kNonAdjacent: {
        // Two or more spans, every two of them at least one span apart.
        size_t prev = *rc::gen::inRange<size_t>(0, n - 2);
        r.spans.push_back(prev);
        do {
          prev = *rc::gen::inRange<size_t>(prev + 2, n);
          r.spans.push_back(prev);
        } while (prev + 2 < n && *rc::gen::arbitrary<bool>());
        break;
      }
      case RequestKind::kAny: {
        std::vector<bool> in(n, false);
        in[*rc::gen::inRange<size_t>(0, n)] = true;
        for (size_t i : *rc::gen::container<std::vector<size_t>>(rc::gen::inRange<size_t>(0, n))) in[i] = true;
        for (size_t i = 0; i < n; ++i)
          if (in[i]) r.spans.push_back(i);
        break;
      }
    }
    return r;
  });
}

rc::Gen<Chunking> chunking(const GenConversation& conv, ChunkKind kind) {
  const size_t n = conv.total_tokens();
  if (kind != ChunkKind::kRandomCuts || n < 2) return rc::gen::just(make_chunking(kind, conv));
  auto cuts = rc::gen::container<std::vector<size_t>>(rc::gen::inRange<size_t>(1, n));
  return rc::gen::map(cuts, [conv](std::vector<size_t> c) {
    std::sort(c.begin(), c.end());
    c.erase(std::unique(c.begin(), c.end()), c.end());
    return make_chunking(ChunkKind::kRandomCuts, conv, c);
  });
}

rc::Gen<std::vector<size_t>> permutation(std::vector<size_t> items) {
  return rc::gen::exec([items]() {
    std::vector<size_t> v = items;
    for (size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[*rc::gen::inRange<size_t>(0, i)]);
    return v;
  });
}

}  // namespace akv::gen
