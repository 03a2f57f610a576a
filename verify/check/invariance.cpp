#include "verify/check/invariance.hpp"

#include <cmath>
#include <limits>
#include <optional>

#include "optimized/cpu/cpu_backend.hpp"
#include "optimized/cuda/arith/gemm.hpp"
#include "reference/prng.hpp"
#include "reference/session.hpp"
#include "verify/check/run.hpp"
#include "verify/check/same_bits.hpp"

namespace akv::check {

namespace {

using Lengths = std::vector<size_t>;

// Compares every chunking in `others` with `base` on a fresh backend each; context names them.
void expect_chunkings(Report& r, const Variant& v, const std::shared_ptr<const Model>& m, const std::vector<Token>& t,
                      const Lengths& base, const std::vector<Lengths>& others, const std::string& what) {
  auto b = v.make(m);
  const Run one = run_chunked(*b, t, base);
  for (size_t i = 0; i < others.size(); ++i)
    r.same(run_diff(one, run_chunked(*b, t, others[i])),
           m->config.name + ", " + std::to_string(t.size()) + " tokens, " + what + " #" + std::to_string(i));
}

}  // namespace

Report one_call_equals_then_decode(const Variant& v) {
  Report r;
  const auto tiny = tiny_model(), small = small_model();
  expect_chunkings(r, v, tiny, tokens(300, 7, tiny->config.vocab), {300}, {{299, 1}}, "299 + 1");
  expect_chunkings(r, v, small, tokens(150, 3, small->config.vocab), {150}, {{149, 1}}, "149 + 1");
  return r;
}

Report chunkings_equal_one_call(const Variant& v) {
  Report r;
  const auto tiny = tiny_model(), small = small_model();
  expect_chunkings(r, v, tiny, tokens(512, 11, tiny->config.vocab), {512}, {Lengths(8, 64)}, "8 x 64");
  expect_chunkings(r, v, small, tokens(512, 4, small->config.vocab), {512}, {Lengths(8, 64)}, "8 x 64");
  expect_chunkings(r, v, tiny, tokens(300, 7, tiny->config.vocab), {300}, {{64, 1, 63, 100, 72}}, "64,1,63,100,72");
  for (const auto& m : {tiny, small}) {
    const size_t n = m == tiny ? 300 : 64;
    SplitMix64 g{42};
    std::vector<Lengths> random;
    for (int trial = 0; trial < 3; ++trial) {
      Lengths chunks;
      for (size_t left = n; left > 0;) {
        const size_t c = std::min(left, static_cast<size_t>(1 + g.next() % 80));
        chunks.push_back(c);
        left -= c;
      }
      random.push_back(chunks);
    }
    expect_chunkings(r, v, m, tokens(n, 6, m->config.vocab), {n}, random, "random chunking");
  }
  return r;
}

Report decode_equals_prefill(const Variant& v) {
  Report r;
  const auto tiny = tiny_model(), small = small_model(3);
  expect_chunkings(r, v, tiny, tokens(300, 7, tiny->config.vocab), {300}, {Lengths(300, 1)}, "token by token");
  // 200 positions: a decode token past the first key block takes the split attention (K4) on
  // two or more threads; prefill takes the item and lane paths.
  expect_chunkings(r, v, small, tokens(200, 5, small->config.vocab), {200}, {Lengths(200, 1)}, "token by token");
  return r;
}

Report longer_than_one_chunk(const Variant& v) {
  Report r;
  const auto tiny = tiny_model();
  const size_t n = cuda::kMaxRows + 45;
  expect_chunkings(r, v, tiny, tokens(n, 21, tiny->config.vocab), {n}, {{n - 3, 1, 1, 1}}, "n-3,1,1,1");
  if (v.backend == "cuda") {  // the device is fast enough for the small model's long run
    const auto small = small_model(3);
    const size_t m = cuda::kMaxRows + 70;
    auto b = v.make(small);
    const auto t = tokens(m, 5, small->config.vocab);
    const Run one = run_chunked(*b, t, {m});
    r.same(run_diff(one, run_chunked(*b, t, {1000, 1, 1047, 1, 20, 1, 1, 1, 1, 1, 44})), "small, 2118 tokens, eleven calls");
    b->set_scratch_poison(-3.0e38f);
    r.same(run_diff(one, run_chunked(*b, t, {64, m - 64})), "small, 2118 tokens, 64 + rest, scratch -3e38");
    b->set_scratch_poison(std::nullopt);
    r.same(run_diff(one, run_chunked(*b, t, {m - 1, 1})), "small, 2118 tokens, n-1 + 1, scratch untouched");
  }
  return r;
}

Report scratch_changes_nothing(const Variant& v) {
  Report r;
  {
    const auto tiny = tiny_model();
    const auto t = tokens(200, 13, tiny->config.vocab);
    auto b = v.make(tiny);
    b->set_scratch_poison(std::nullopt);
    const Run plain = run_chunked(*b, t, {120, 80});
    const std::pair<std::optional<float>, Lengths> cases[] = {
        {std::numeric_limits<float>::quiet_NaN(), {120, 80}}, {-3.0e38f, {200}}, {0.0f, {1, 199}}};
    for (const auto& [poison, chunks] : cases) {
      b->set_scratch_poison(poison);
      r.same(run_diff(plain, run_chunked(*b, t, chunks)), "tiny, scratch " + std::to_string(*poison));
    }
  }
  {
    const auto small = small_model();
    const auto t = tokens(50, 8, small->config.vocab);
    std::optional<Run> first;
    for (std::optional<float> p : {std::optional<float>(), std::optional<float>(NAN), std::optional<float>(1e30f)}) {
      auto b = v.make(small);
      b->set_scratch_poison(p);
      const std::string what = "small, scratch " + (p ? std::to_string(*p) : std::string("untouched"));
      Run a = run_chunked(*b, t, {40, 10});
      if (first) r.same(run_diff(*first, a), what + ", calls 40, 10");
      r.same(run_diff(a, run_chunked(*b, t, {3, 47})), what + ", calls 3, 47 on the scratch left by 40, 10");
      if (!first) first = std::move(a);
    }
  }
  return r;
}

Report earlier_work_changes_nothing(const Variant& v) {
  Report r;
  const auto tiny = tiny_model();
  const auto t = tokens(150, 17, tiny->config.vocab), other = tokens(400, 99, tiny->config.vocab);
  auto fresh = v.make(tiny);
  const Run first = run_chunked(*fresh, t, {150});
  auto used = v.make(tiny);
  run_chunked(*used, other, {400});  // an unrelated session on another backend object
  r.same(run_diff(first, run_chunked(*used, t, {150})), "after 400 unrelated tokens on another backend");
  run_chunked(*fresh, other, {400});  // and between two runs of the same object
  r.same(run_diff(first, run_chunked(*fresh, t, {150})), "after 400 unrelated tokens on the same backend");
  return r;
}

Report batch_equals_alone(const Variant& v) {
  Report r;
  const auto m = small_model();
  auto b = v.make(m);
  const size_t vocab = m->config.vocab;
  const std::vector<size_t> hist = {0, 40, 70}, add = {37, 1, 20};
  std::vector<KVCache> alone(3, KVCache(m->config)), batched(3, KVCache(m->config));
  std::vector<std::vector<Token>> a;
  std::vector<std::vector<float>> la(3), lb(3);
  for (int i = 0; i < 3; ++i) {
    const auto h = tokens(hist[i], 10 + i, m->config.vocab);
    a.push_back(tokens(add[i], 20 + i, m->config.vocab));
    std::vector<float> scratch(hist[i] * vocab);
    if (hist[i]) {
      b->forward(alone[i], h, scratch);
      b->forward(batched[i], h, scratch);
    }
    la[i].resize(add[i] * vocab);
    lb[i].resize(add[i] * vocab);
    b->forward(alone[i], a[i], la[i]);
  }
  std::vector<BatchItem> items;
  for (int i = 0; i < 3; ++i) items.push_back({&batched[i], a[i], lb[i], {}});
  b->forward_batch(items);
  for (int i = 0; i < 3; ++i) {
    const std::string s = "batch session " + std::to_string(i);
    r.same(cache_diff(alone[i], batched[i]), s + " cache");
    r.same(same_bits(la[i], lb[i]).what(), s + " logits");
  }
  return r;
}

Report threads_change_nothing(const Variant& v) {
  Report r;
  if (v.backend != "cpu") {
    r.skipped = v.label + " has no threads";
    return r;
  }
  if (v.threads == 1) {
    r.skipped = v.label + " is the one-thread baseline the other thread counts are compared with";
    return r;
  }
  const auto m = small_model();
  const auto t = tokens(100, 7, m->config.vocab);
  Variant one = v;
  one.threads = 1;
  auto b = v.make(m), b1 = one.make(m);
  r.expect(static_cast<cpu::CpuBackend&>(*b).threads() == v.threads,
           "the backend runs " + std::to_string(static_cast<cpu::CpuBackend&>(*b).threads()) + " threads, not " +
               std::to_string(v.threads));
  r.same(run_diff(run_chunked(*b1, t, {70, 1, 29}), run_chunked(*b, t, {70, 1, 29})),
         std::to_string(v.threads) + " threads vs 1");
  return r;
}

Report evict_equals_never(const Variant& v, std::shared_ptr<const Model> model, const std::vector<std::vector<Token>>& spans,
                          const std::set<size_t>& evict, const std::string& name, bool two_backends) {
  Report r;
  auto bp = v.make(model);
  auto bn = two_backends ? v.make(model) : nullptr;
  Session s(*bp), never(two_backends ? *bn : *bp);
  for (size_t i = 0; i < spans.size(); ++i) {
    s.append(i, spans[i]);
    if (!evict.count(i)) never.append(i, spans[i]);
  }
  const std::vector<float> before(s.logits().begin(), s.logits().end());
  r.expect(!cache_diff(s.cache(), never.cache()).empty(), "the caches agreed before the eviction (control)", name);
  s.evict(std::vector<SpanId>(evict.begin(), evict.end()));
  r.expect(s.tokens() == never.tokens(), "entry tokens differ after the eviction", name);
  r.same(cache_diff(s.cache(), never.cache()), name + ": cache after the eviction");
  r.same(same_bits(s.logits(), never.logits()).what(), name + ": next-token logits after the eviction");
  const BitsDiff control = same_bits(before, never.logits());
  r.expect(control.non_finite == 0 && control.max_abs > 0, "the control did not move: keeping the span left the logits", name);
  const auto la = s.append(100, spans.front()), lb = never.append(100, spans.front());
  r.same(same_bits(la, lb).what(), name + ": logits of a span appended after the eviction");
  r.same(cache_diff(s.cache(), never.cache()), name + ": cache after a span appended after the eviction");
  return r;
}

}  // namespace akv::check
