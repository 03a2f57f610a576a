// Fixed eviction cases on a real conversation (spec/theorems.md E1-E4, spec/operations.md O3).
// ad02 has 13 messages; 3 and 5 are its poisoned tool results.
#include <gtest/gtest.h>

#include <cstring>

#include "support.hpp"
#include <ostream>
#include "verify/compare.hpp"
#include "runtime/digest.hpp"

using namespace akv;
using akv::test::build;
using akv::test::built;
using akv::test::spans_of;
using akv::test::tiny;

namespace {

// Everything E1 says is equal: entries, positions (implicit: entry i at i), token and span
// ids of every entry, the span table, K/V bytes, next-token logits.
void expect_same_state(const Session& a, const Session& b) {
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(a.tokens(), b.tokens());
  EXPECT_EQ(a.entry_spans(), b.entry_spans());
  ASSERT_EQ(a.spans().size(), b.spans().size());
  for (size_t i = 0; i < a.spans().size(); ++i) {
    EXPECT_EQ(a.spans()[i].id, b.spans()[i].id);
    EXPECT_EQ(a.spans()[i].start, b.spans()[i].start);
    EXPECT_EQ(a.spans()[i].length, b.spans()[i].length);
  }
  const size_t bytes = a.size() * a.cache().kv_dim() * sizeof(float);
  for (int l = 0; l < a.cache().n_layers() && bytes > 0; ++l) {  // memcmp takes no null pointer, even for 0 bytes
    EXPECT_EQ(std::memcmp(a.cache().k(l), b.cache().k(l), bytes), 0) << "K layer " << l;
    EXPECT_EQ(std::memcmp(a.cache().v(l), b.cache().v(l), bytes), 0) << "V layer " << l;
  }
  const Diff d = compare(a.logits(), b.logits());
  EXPECT_TRUE(d.equal());
  EXPECT_EQ(d.max_abs, 0.0f);
}

struct Case {
  const char* name;
  std::set<size_t> evict;
};

constexpr const char* kFile = "ad02_slack_ut16_claude35.json";

class EvictCases : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override { spans_ = spans_of(kFile); }
  std::vector<std::vector<Token>> spans_;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

const Case kCases[] = {
    {"Interior", {3}},             // a tool result with nine messages after it
    {"First", {0}},                // the system prompt: everything is recomputed
    {"Last", {12}},                // nothing after it: nothing recomputed
    {"TwoNonAdjacent", {3, 5}},    // both poisoned tool results at once
    {"Adjacent", {3, 4}},
};

}  // namespace

using E1_EvictEqualsNever = EvictCases;
TEST_P(E1_EvictEqualsNever, BitwiseStateAndLogits) {
  Session s = built(kFile), never = built(kFile, GetParam().evict);
  std::vector<SpanId> ids(GetParam().evict.begin(), GetParam().evict.end());
  s.evict(ids);
  expect_same_state(s, never);
  // And every logit produced next: one more message appended to both.
  const auto next = spans_.front();
  const auto la = s.append(100, next), lb = never.append(100, next);
  EXPECT_TRUE(compare(la, lb).equal());
  EXPECT_EQ(cache_sha256(s.cache()), cache_sha256(never.cache()));
}
INSTANTIATE_TEST_SUITE_P(Ad02, E1_EvictEqualsNever, ::testing::ValuesIn(kCases),
                         [](const auto& i) { return std::string(i.param.name); });

using E2_PoisonMovesLogits = EvictCases;
TEST_P(E2_PoisonMovesLogits, PoisonVsNeverDiffers) {
  const Session s = built(kFile), never = built(kFile, GetParam().evict);
  const Diff d = compare(s.logits(), never.logits());
  EXPECT_TRUE(d.comparable() && !d.same_bytes);
  EXPECT_GT(d.max_abs, 0.0f);
}
INSTANTIATE_TEST_SUITE_P(Ad02, E2_PoisonMovesLogits, ::testing::ValuesIn(kCases),
                         [](const auto& i) { return std::string(i.param.name); });

// Where the eviction cuts and how many entries survive after it, counted from the encoded
// conversation (never from the session's span table or its EvictStats).
struct Expected {
  size_t cut = 0, survivors = 0, evicted = 0;
};
Expected expected(const std::vector<std::vector<Token>>& spans, const std::set<size_t>& ev) {
  Expected e;
  for (size_t i = 0; i < *ev.begin(); ++i) e.cut += spans[i].size();
  for (size_t i = *ev.begin(); i < spans.size(); ++i) (ev.count(i) ? e.evicted : e.survivors) += spans[i].size();
  return e;
}

using E3_PrefixUntouched = EvictCases;
TEST_P(E3_PrefixUntouched, PrefixBytesAndWriteSerials) {
  Session s = built(kFile);
  const Expected e = expected(spans_, GetParam().evict);
  const std::string before = cache_prefix_sha256(s.cache(), e.cut);
  // Keep the prefix's bytes too, to compare them directly, and its write serials.
  std::vector<float> k0(s.cache().k(1), s.cache().k(1) + e.cut * s.cache().kv_dim());
  const std::vector<uint64_t> serials(s.cache().write_serials().begin(), s.cache().write_serials().begin() + e.cut);
  std::vector<SpanId> ids(GetParam().evict.begin(), GetParam().evict.end());
  s.evict(ids);
  ASSERT_GE(s.cache().size(), e.cut);
  EXPECT_EQ(cache_prefix_sha256(s.cache(), e.cut), before);
  // An empty prefix (the first span) has a null data(): memcmp must not see it (UBSan).
  EXPECT_TRUE(k0.empty() || std::memcmp(k0.data(), s.cache().k(1), k0.size() * sizeof(float)) == 0);
  for (size_t p = 0; p < e.cut; ++p) ASSERT_EQ(s.cache().write_serials()[p], serials[p]) << "prefix entry " << p << " was written";
}
INSTANTIATE_TEST_SUITE_P(Ad02, E3_PrefixUntouched, ::testing::ValuesIn(kCases),
                         [](const auto& i) { return std::string(i.param.name); });

// E4 measured on the cache: its own write counter grows by exactly |X|, and exactly the
// entries at positions >= f carry new write serials. The session's EvictStats is only
// compared with that measurement, never trusted for it.
using E4_CostIsSurvivors = EvictCases;
TEST_P(E4_CostIsSurvivors, RecomputesExactlyX) {
  Session s = built(kFile);
  const Expected e = expected(spans_, GetParam().evict);
  const uint64_t written = s.cache().entries_written();
  std::vector<SpanId> ids(GetParam().evict.begin(), GetParam().evict.end());
  const EvictStats st = s.evict(ids);
  EXPECT_EQ(s.cache().entries_written() - written, e.survivors) << "entries the cache wrote";
  ASSERT_EQ(s.cache().size(), e.cut + e.survivors);
  for (size_t p = 0; p < s.cache().size(); ++p)
    ASSERT_EQ(s.cache().write_serials()[p] > written, p >= e.cut) << "entry " << p;
  EXPECT_EQ(st.tokens_recomputed, e.survivors) << "the session's claim agrees with the cache";
  EXPECT_EQ(st.tokens_evicted, e.evicted);
  EXPECT_EQ(s.tokens_recomputed(), e.survivors);
}
INSTANTIATE_TEST_SUITE_P(Ad02, E4_CostIsSurvivors, ::testing::ValuesIn(kCases),
                         [](const auto& i) { return std::string(i.param.name); });

TEST(E1_EvictEqualsNever, OrderOfEvictionsDoesNotMatter) {
  Session ab = built(kFile), ba = built(kFile), together = built(kFile);
  const Session never = built(kFile, {3, 5});
  ab.evict(3);
  ab.evict(5);
  ba.evict(5);
  ba.evict(3);
  const SpanId both[] = {5, 3};
  together.evict(both);
  expect_same_state(ab, never);
  expect_same_state(ba, never);
  expect_same_state(together, never);
}

TEST(E1_EvictEqualsNever, EvictThenAppendThenEvict) {
  // Evictions interleaved with appends compose: the result equals a fresh build of what is
  // visible, with the same span ids.
  const auto spans = spans_of("ad01_banking_ut0_gpt4omini.json");
  auto be = make_reference_backend(tiny());
  Session s(*be), never(*be);
  build(s, spans);
  s.evict(3);
  s.append(50, spans[1]);
  s.append(51, spans[2]);
  s.evict(50);
  build(never, spans, {3});
  never.append(51, spans[2]);
  expect_same_state(s, never);
}

TEST(O3_Evict, AllSpansLeavesEmptySession) {
  const auto spans = spans_of("ja01_banking_bill_important_instructions.json");
  auto be = make_reference_backend(tiny());
  Session s(*be);
  build(s, spans);
  const SpanId all[] = {0, 1, 2};
  const EvictStats st = s.evict(all);
  EXPECT_EQ(st.truncated_at, 0u);
  EXPECT_EQ(st.tokens_recomputed, 0u);
  EXPECT_EQ(s.size(), 0u);
  EXPECT_TRUE(s.spans().empty());
  // The emptied session is usable and equals a fresh one.
  Session fresh(*be);
  s.append(7, spans[0]);
  fresh.append(7, spans[0]);
  expect_same_state(s, fresh);
}
