// The eviction policies of spec/leakage.md (L1-L8) on the synthetic models: keep, mask, kshift
// against akv's exact eviction, bit for bit where the spec says equal.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fmt/format.h>
#include <set>

#include "leakage/approx_evict.hpp"
#include "optimized/cpu/isa.hpp"
#include "readers/conversation/chat_parse.hpp"
#include "reference/error.hpp"
#include "reference/ops.hpp"
#include "reference/policy.hpp"
#include "reference/tokenizer.hpp"
#include "cli_support.hpp"
#include "support.hpp"
#include <nlohmann/json.hpp>
#include "runtime/backends.hpp"
#include "runtime/digest.hpp"

using namespace akv;
using akv::test::built;
using akv::test::spans_of;

namespace {

const char* kConv = "ad02_slack_ut16_claude35.json";  // 13 messages, "poisoned": [3, 5]

// Appends `next` as a new span and returns its logits (m, vocab).
std::vector<float> after(Session& s, const std::vector<Token>& next) { return s.append(1000, next); }

bool same_bytes(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// A state digest: the cache bytes, the mask, tokens, span table and next-token logits.
std::string state_of(const Session& s) {
  std::string d = cache_sha256(s.cache()) + ":" + std::to_string(s.size());
  if (const uint8_t* m = s.cache().mask()) d += std::string(reinterpret_cast<const char*>(m), s.size());
  for (Token t : s.tokens()) d += "," + std::to_string(t);
  for (const SpanInfo& sp : s.spans()) d += fmt::format(";{}@{}+{}", sp.id, sp.start, sp.length);
  if (!s.spans().empty()) d += sha256_floats(s.logits());
  return d;
}

}  // namespace

TEST(L1_Policies, NamesParseAndUnknownIsBadInput) {
  for (EvictPolicy p : all_policies()) EXPECT_EQ(parse_policy(policy_name(p)), p);
  EXPECT_EQ(parse_policies("exact,keep").size(), 2u);
  for (const char* bad : {"", "Exact", "kshift,", ",mask", "mask,mask", "shift", "keep mask"}) {
    try {
      parse_policies(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kBadInput) << bad;
    }
  }
}

TEST(L1_Policies, ErrorsLeaveTheSessionUnchanged) {
  for (EvictPolicy p : all_policies()) {
    Session s = built(kConv);
    const std::string before = state_of(s);
    const std::vector<SpanId> unknown{3, 77}, twice{3, 3}, none{};
    EXPECT_THROW(evict_under(s, unknown, p), Error) << policy_name(p);
    EXPECT_THROW(evict_under(s, twice, p), Error) << policy_name(p);
    EXPECT_THROW(evict_under(s, none, p), Error) << policy_name(p);
    EXPECT_EQ(state_of(s), before) << policy_name(p);
    if (p == EvictPolicy::kKeep) continue;
    evict_under(s, std::vector<SpanId>{3}, p);
    const std::string after_evict = state_of(s);
    try {
      evict_under(s, std::vector<SpanId>{3}, p);
      ADD_FAILURE() << policy_name(p) << ": evicted twice";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kSpanEvicted);
    }
    EXPECT_EQ(state_of(s), after_evict);
  }
}

TEST(L1_Policies, OnlyExactRecomputes) {
  for (EvictPolicy p : all_policies()) {
    Session s = built(kConv);
    const uint64_t written = s.cache().entries_written();
    const EvictStats st = evict_under(s, std::vector<SpanId>{3, 5}, p);
    EXPECT_EQ(st.truncated_at, built(kConv).spans()[3].start);
    const size_t g = built(kConv).spans()[3].length + built(kConv).spans()[5].length;
    EXPECT_EQ(st.tokens_evicted, p == EvictPolicy::kKeep ? 0u : g) << policy_name(p);
    if (p == EvictPolicy::kExact) {
      EXPECT_GT(st.tokens_recomputed, 0u);
    } else {
      EXPECT_EQ(st.tokens_recomputed, 0u) << policy_name(p);
      EXPECT_EQ(s.tokens_recomputed(), 0u);
    }
    if (p == EvictPolicy::kKeep || p == EvictPolicy::kMask) {
      EXPECT_EQ(s.cache().entries_written(), written);
    }
  }
}

TEST(L2_Keep, ChangesNothing) {
  Session s = built(kConv);
  const std::string before = state_of(s);
  evict_under(s, std::vector<SpanId>{3, 5}, EvictPolicy::kKeep);
  EXPECT_EQ(state_of(s), before);
  EXPECT_FALSE(s.is_evicted(3));
}

TEST(L3_Mask, ReferenceHeadEqualsAttentionOverTheUnmaskedKeysAlone) {
  const int n = 11, hd = 8;
  std::vector<float> q(hd), k(n * hd), v(n * hd);
  for (int i = 0; i < hd; ++i) q[i] = std::sin(1.0f + i);
  for (int i = 0; i < n * hd; ++i) k[i] = std::cos(0.37f * i), v[i] = std::sin(0.11f * i + 2);
  std::vector<unsigned char> mask(n, 0);
  for (int p : {0, 2, 3, 4, 7}) mask[p] = 1;
  std::vector<float> kc, vc;
  for (int p = 0; p < n; ++p)
    if (!mask[p]) {
      kc.insert(kc.end(), k.begin() + p * hd, k.begin() + (p + 1) * hd);
      vc.insert(vc.end(), v.begin() + p * hd, v.begin() + (p + 1) * hd);
    }
  std::vector<float> out(hd), ref(hd), att(n), attc(n);
  ref::attention_head(out.data(), q.data(), k.data(), v.data(), n, hd, hd, att.data(), mask.data());
  ref::attention_head(ref.data(), q.data(), kc.data(), vc.data(), static_cast<int>(kc.size() / hd), hd, hd, attc.data());
  EXPECT_TRUE(same_bytes(out, ref));
  // And the mask matters: without it the head differs.
  ref::attention_head(ref.data(), q.data(), k.data(), v.data(), n, hd, hd, att.data());
  EXPECT_FALSE(same_bytes(out, ref));
}

TEST(L3_Mask, KeepsEntriesPositionsAndSpansAndRefusesAppends) {
  Session s = built(kConv);
  const std::string cache_before = cache_sha256(s.cache());
  const auto spans_before = s.spans();
  evict_under(s, std::vector<SpanId>{3}, EvictPolicy::kMask);
  EXPECT_EQ(cache_sha256(s.cache()), cache_before);
  ASSERT_EQ(s.spans().size(), spans_before.size());
  ASSERT_NE(s.cache().mask(), nullptr);
  for (size_t p = 0; p < s.size(); ++p) {
    const bool in = p >= spans_before[3].start && p < spans_before[3].start + spans_before[3].length;
    EXPECT_EQ(s.cache().mask()[p], in ? 1 : 0) << p;
  }
  EXPECT_TRUE(s.is_evicted(3));
  const std::vector<Token> t{65};
  EXPECT_THROW(s.append(3, t), Error);
  after(s, t);  // a new span: unmasked
  EXPECT_EQ(s.cache().mask()[s.size() - 1], 0);
}

// Masks reach every CPU ISA through the one K4 template: the same bits on each, finite even
// when whole key blocks (message 0, over 64 tokens) are masked; cuda-emu runs G5 with them.
TEST(L3_Mask, EveryCpuIsaGivesTheSameBitsAndCudaEmuRuns) {
  const auto spans = spans_of("ja01_banking_bill_important_instructions.json");  // message 0: > 64 tokens
  std::vector<std::vector<float>> outs;
  std::vector<std::string> names;
  auto run = [&](Backend& be, std::vector<SpanId> masked) {
    Session s(be);
    test::build(s, spans);
    evict_under(s, masked, EvictPolicy::kMask);
    return after(s, spans[1]);
  };
  ASSERT_GT(spans[0].size(), 64u);
  for (const std::vector<SpanId>& masked : {std::vector<SpanId>{1}, std::vector<SpanId>{0}}) {
    std::vector<float> first;
    for (cpu::Isa isa : cpu::supported_isas()) {
      auto be = make_backend("cpu", test::tiny(), BackendOptions{cpu::isa_name(isa), 2});
      const std::vector<float> l = run(*be, masked);
      for (float x : l) ASSERT_TRUE(std::isfinite(x)) << cpu::isa_name(isa);
      if (first.empty()) first = l;
      else EXPECT_TRUE(same_bytes(first, l)) << cpu::isa_name(isa) << " differs from " << cpu::isa_name(cpu::supported_isas()[0]);
    }
    auto emu = make_backend("cuda-emu", test::tiny());
    const std::vector<float> le = run(*emu, masked);
    for (float x : le) ASSERT_TRUE(std::isfinite(x));
    // Masking changed the cpu's logits (it did something).
    auto be = make_backend("cpu", test::tiny());
    Session plain(*be);
    test::build(plain, spans);
    EXPECT_FALSE(same_bytes(after(plain, spans[1]), first));
  }
  EXPECT_GE(cpu::supported_isas().size(), 1u);
}

TEST(L4_KShift, ShiftOutIsTheSpecifiedArithmetic) {
  Session s = built(kConv);
  const Config& c = s.model().config;
  const RopeTable& t = *s.model().rope;
  const KVCache before = s.cache();
  const size_t f = s.spans()[3].start, g = s.spans()[3].length, n = s.size();
  KVCache k = before;
  shift_out(k, f, f + g, t);
  ASSERT_EQ(k.size(), n - g);
  EXPECT_EQ(k.entries_written(), before.entries_written() + (n - f - g));
  const size_t kvd = c.kv_dim(), half = c.head_dim / 2;
  for (int l = 0; l < c.n_layers; ++l) {
    EXPECT_EQ(std::memcmp(k.k(l), before.k(l), f * kvd * sizeof(float)), 0);
    EXPECT_EQ(std::memcmp(k.v(l), before.v(l), f * kvd * sizeof(float)), 0);
    EXPECT_EQ(std::memcmp(k.v(l) + f * kvd, before.v(l) + (f + g) * kvd, (n - f - g) * kvd * sizeof(float)), 0);
    for (size_t p = f; p < n - g; ++p)
      for (int h = 0; h < c.n_kv_heads; ++h)
        for (size_t i = 0; i < half; ++i) {
          const float* src = before.k(l) + (p + g) * kvd + h * c.head_dim;
          const float* dst = k.k(l) + p * kvd + h * c.head_dim;
          const float cs = t.cos_at(static_cast<int>(g))[i], sn = t.sin_at(static_cast<int>(g))[i];
          const float p0 = src[i] * cs, p1 = src[i + half] * sn, p2 = src[i + half] * cs, p3 = src[i] * sn;
          const float x0 = p0 + p1, x1 = p2 - p3;
          ASSERT_EQ(std::memcmp(&dst[i], &x0, 4), 0) << l << " " << p << " " << i;
          ASSERT_EQ(std::memcmp(&dst[i + half], &x1, 4), 0) << l << " " << p << " " << i;
        }
  }
}

TEST(L4_KShift, SessionDropsTheSpansKeepsStaleLogitsRecomputesNothing) {
  Session s = built(kConv);
  const std::vector<float> last_before(s.logits().begin(), s.logits().end());
  evict_under(s, std::vector<SpanId>{3, 5}, EvictPolicy::kKShift);
  const Session never = built(kConv, {3, 5});
  EXPECT_EQ(s.size(), never.size());
  EXPECT_EQ(s.tokens(), never.tokens());
  ASSERT_EQ(s.spans().size(), never.spans().size());
  for (size_t i = 0; i < s.spans().size(); ++i) {
    EXPECT_EQ(s.spans()[i].id, never.spans()[i].id);
    EXPECT_EQ(s.spans()[i].start, never.spans()[i].start);
  }
  EXPECT_TRUE(same_bytes({s.logits().begin(), s.logits().end()}, last_before));  // L4: no recompute
  // Layer 0's values depend on the token alone: they equal never's. Keys were re-rotated.
  const size_t bytes = s.size() * s.cache().kv_dim() * sizeof(float);
  EXPECT_EQ(std::memcmp(s.cache().v(0), never.cache().v(0), bytes), 0);
}

TEST(L5_ExactLeaksNothing, LogitsAndContinuationEqualNever) {
  for (const char* file : {kConv, "ja01_banking_bill_important_instructions.json"}) {
    const auto spans = spans_of(file);
    const auto poisoned_ids = load_conversation(test::example(file)).poisoned;
    std::set<size_t> skip(poisoned_ids.begin(), poisoned_ids.end());
    Session s = built(file), never = built(file, skip);
    evict_under(s, std::vector<SpanId>(poisoned_ids.begin(), poisoned_ids.end()), EvictPolicy::kExact);
    std::vector<Token> next{tok::kAssistant};
    for (int i = 0; i < 8; ++i) {  // greedy, both sessions
      const std::vector<float> a = s.append(2000, next, LogitRows::kLast), b = never.append(2000, next, LogitRows::kLast);
      ASSERT_TRUE(same_bytes(a, b)) << file << " step " << i;
      next = {static_cast<Token>(std::max_element(a.begin(), a.end()) - a.begin())};
    }
  }
}

TEST(L6_KShiftTailEqualsExact, CacheSpansAndEveryLaterLogit) {
  const auto spans = spans_of(kConv);
  const SpanId last = spans.size() - 1;
  Session k = built(kConv), e = built(kConv);
  evict_under(k, std::vector<SpanId>{last}, EvictPolicy::kKShift);
  evict_under(e, std::vector<SpanId>{last}, EvictPolicy::kExact);
  EXPECT_EQ(state_of(k), state_of(e));
  EXPECT_TRUE(same_bytes(after(k, spans[1]), after(e, spans[1])));
  // Two tail spans at once, too.
  Session k2 = built(kConv), e2 = built(kConv);
  evict_under(k2, std::vector<SpanId>{last, last - 1}, EvictPolicy::kKShift);
  evict_under(e2, std::vector<SpanId>{last - 1, last}, EvictPolicy::kExact);
  EXPECT_EQ(state_of(k2), state_of(e2));
  EXPECT_TRUE(same_bytes(after(k2, spans[1]), after(e2, spans[1])));
}

TEST(L7_ApproximationsAreNotExact, InteriorSpanReadByLaterTokens) {
  const auto spans = spans_of(kConv);
  Session never = built(kConv, {3, 5});
  const std::vector<float> want = after(never, spans[1]);
  for (EvictPolicy p : {EvictPolicy::kKShift, EvictPolicy::kMask}) {
    Session s = built(kConv);
    evict_under(s, std::vector<SpanId>{3, 5}, p);
    const std::vector<float> got = after(s, spans[1]);
    EXPECT_GT(compare(got, want).max_abs, 0.0f) << policy_name(p);
  }
  // mask keeps the gap in the positions: not exact even for the tail span.
  const SpanId last = spans.size() - 1;
  Session m = built(kConv), nt = built(kConv, {last});
  evict_under(m, std::vector<SpanId>{last}, EvictPolicy::kMask);
  EXPECT_GT(compare(after(m, spans[1]), after(nt, spans[1])).max_abs, 0.0f);
}

TEST(L8_PrefixUntouched, EveryPolicy) {
  for (EvictPolicy p : all_policies()) {
    Session s = built(kConv);
    const size_t f = s.spans()[3].start;
    const std::string prefix = cache_prefix_sha256(s.cache(), f), whole = cache_sha256(s.cache());
    evict_under(s, std::vector<SpanId>{3, 5}, p);
    EXPECT_EQ(cache_prefix_sha256(s.cache(), f), prefix) << policy_name(p);
    if (p == EvictPolicy::kKeep || p == EvictPolicy::kMask) {
      EXPECT_EQ(cache_sha256(s.cache()), whole) << policy_name(p);
    }
  }
}

// L1: the witness runs a policy in place of exact eviction; only exact passes on an interior span.
TEST(L1_WitnessPolicy, OnlyExactPassesOnAnInteriorSpan) {
  const std::string f = akv::test::example("ad02_slack_ut16_claude35.json");  // poisoned 3, 5: interior
  for (const std::string p : {"exact", "kshift", "mask", "keep"}) {
    const auto r = akv::test::run_akv({"witness", f, "--model", "tiny", "--policy", p, "--json"});
    const auto j = nlohmann::json::parse(r.out.empty() ? "{}" : r.out);
    ASSERT_TRUE(j.contains("policy")) << p << ": " << r.err;
    EXPECT_EQ(j["policy"], p);
    if (p == "exact") {
      EXPECT_EQ(r.code, 0) << r.err;
      EXPECT_EQ(j["evict_vs_never_max_abs"].get<double>(), 0.0);
      EXPECT_EQ(j["tokens_probe"].get<size_t>(), 0u);
    } else {
      EXPECT_EQ(r.code, 1) << p << " must not pass: " << r.err;
      EXPECT_GT(j["evict_vs_never_max_abs"].get<double>(), 0.0) << p;
      EXPECT_GT(j["tokens_probe"].get<size_t>(), 0u) << p;
      EXPECT_FALSE(j["exact"].get<bool>()) << p;
    }
    EXPECT_TRUE(j["prefix_untouched"].get<bool>()) << p << " (L8)";
  }
  const auto bad = akv::test::run_akv({"witness", f, "--model", "tiny", "--policy", "approx"});
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("unknown policy 'approx'"), std::string::npos) << bad.err;
  EXPECT_EQ(bad.out, "");
}
