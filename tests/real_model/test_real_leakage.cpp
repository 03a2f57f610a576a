// The eviction policies on the real model (spec/leakage.md L5-L7): SmolLM2-135M-Instruct on
// the short poisoned conversation (118 tokens), cpu backend, a 16-token greedy continuation.
#include <gtest/gtest.h>

#include "../support.hpp"
#include "leakage/leakage.hpp"
#include "readers/conversation/chat_parse.hpp"

using namespace akv;

namespace {
const std::string kShort = std::string(AKV_SOURCE_DIR) + "/tests/real_model/data/short_poisoned.json";

LeakageReport measure(std::vector<size_t> evict) {
  LeakageOptions opt;  // model smollm2, backend cpu
  opt.continuation = 16;
  opt.positions = false;
  opt.evict = std::move(evict);
  return run_leakage(load_conversation(kShort), kShort, opt);
}
const PolicyResult& of(const LeakageReport& r, EvictPolicy p) {
  for (const PolicyResult& x : r.policies)
    if (x.policy == p) return x;
  throw std::logic_error("policy not measured");
}
}  // namespace

TEST(L5_ExactLeaksNothing, RealModelShortConversation) {
  const LeakageReport r = measure({});  // its "poisoned" list: message 3 of 5
  ASSERT_EQ(r.model, "smollm2");
  const PolicyResult& e = of(r, EvictPolicy::kExact);
  EXPECT_TRUE(e.logits_identical);
  EXPECT_EQ(e.max_abs, 0.0f);
  EXPECT_EQ(e.kl, 0.0);
  EXPECT_EQ(e.first_diff, -1);
  EXPECT_EQ(e.continuation, r.never_continuation);
  EXPECT_TRUE(r.exact_ok());
  // L7 on the real model: the interior span was read by message 4.
  EXPECT_GT(of(r, EvictPolicy::kKShift).max_abs, 0.0f);
  EXPECT_GT(of(r, EvictPolicy::kMask).max_abs, 0.0f);
  EXPECT_GT(of(r, EvictPolicy::kKeep).max_abs, 0.0f);
}

TEST(L6_KShiftTailEqualsExact, RealModelLastMessage) {
  const LeakageReport r = measure({4});
  const PolicyResult& k = of(r, EvictPolicy::kKShift);
  EXPECT_TRUE(k.logits_identical);
  EXPECT_EQ(k.max_abs, 0.0f);
  EXPECT_EQ(k.kl, 0.0);
  EXPECT_EQ(k.first_diff, -1);
  EXPECT_GT(of(r, EvictPolicy::kMask).max_abs, 0.0f);  // mask keeps the gap in the positions
}
