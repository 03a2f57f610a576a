// The harness's own teeth (verify/check/): its invariance checks catch deliberately broken
// backends (tests/properties/mutants.hpp), its one same_bits says where bits differ, its one
// run_chunked refuses a chunk list that does not fit, and the variant registry names what it
// cannot run. The clause is I1, which these checks stand behind.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "harness_support.hpp"
#include "reference/error.hpp"
#include "support.hpp"
#include "tests/properties/mutants.hpp"
#include "verify/check/invariance.hpp"
#include "runtime/backends.hpp"
#include "verify/check/run.hpp"

using namespace akv;

namespace {

check::Variant mutant(test::Mutation m) {
  check::Variant v = check::variant("reference");
  v.label = "mutant";
  v.factory = [m](std::shared_ptr<const Model> model) { return std::make_unique<test::MutantBackend>(std::move(model), m); };
  return v;
}

}  // namespace

TEST(I1_HarnessTeeth, ChunkSensitiveBackendFailsTheChunkingChecks) {
  // The mutant's first logit of every call of two or more tokens is one ulp off: one call
  // against token by token differs at index 0 (n-1 then one does not: both flip row 0).
  const check::Report r = check::decode_equals_prefill(mutant(test::Mutation::kChunkSensitive));
  EXPECT_FALSE(r.passed());
  ASSERT_EQ(r.failures.size(), 2u);  // tiny and small
  for (const std::string& f : r.failures)
    EXPECT_NE(f.find("logits: bits differ first at index 0"), std::string::npos) << f;
}

TEST(I1_HarnessTeeth, WarmStateBackendFailsEarlierWork) {
  const check::Variant v = mutant(test::Mutation::kWarmState);
  const check::Report r = check::earlier_work_changes_nothing(v);
  EXPECT_FALSE(r.passed());
  ASSERT_FALSE(r.failures.empty());
  EXPECT_NE(r.failures[0].find("cache: K of layer 0"), std::string::npos) << r.failures[0];
}

TEST(I1_HarnessTeeth, TheSameChecksPassOnTheReference) {
  // The control of the two tests above: the unbroken backend passes what the mutants fail.
  const check::Variant v = check::variant("reference");
  EXPECT_TRUE(check::decode_equals_prefill(v).passed());
  EXPECT_TRUE(check::earlier_work_changes_nothing(v).passed());
}

TEST(I1_HarnessTeeth, SameBitsReportsTheFirstDifferenceAndMaxDelta) {
  const std::vector<float> a{1, 2, 3, 4}, b{1, 2, 3.5f, 2};
  const check::BitsDiff d = check::same_bits(a, b);
  EXPECT_FALSE(d);
  EXPECT_EQ(d.first, 2u);
  EXPECT_EQ(d.max_abs, 2.0f);
  EXPECT_EQ(d.what(), "bits differ first at index 2 of 4, max|delta| = 2.000000");
  EXPECT_TRUE(check::same_bits(a, a));
  EXPECT_FALSE(check::same_bits(std::vector<float>{0.0f}, std::vector<float>{-0.0f}));  // bits, not ==
  EXPECT_EQ(check::same_bits(a, std::vector<float>{1, 2}).what(), "lengths differ: 4 vs 2");
  // A NaN is a failure of its own (spec/arithmetic.md A5): counted, located, never "the same".
  const check::BitsDiff n = check::same_bits(std::vector<float>{1, NAN}, std::vector<float>{1, NAN});
  EXPECT_FALSE(n);
  EXPECT_EQ(n.non_finite, 2u);
  EXPECT_EQ(n.first_non_finite, 1u);
}

TEST(I1_HarnessTeeth, RunChunkedRefusesChunksThatDoNotFit) {
  auto be = check::variant("reference").make(test::tiny());
  const auto t = check::tokens(10, 1, test::tiny()->config.vocab);
  EXPECT_THROW(check::run_chunked(*be, t, {4, 4}), Error);
  EXPECT_THROW(check::run_chunked(*be, t, {4, 7}), Error);
  EXPECT_THROW(check::run_chunked(*be, t, {0, 10}), Error);
  EXPECT_EQ(check::run_chunked(*be, t, {4, 6}).cache.size(), 10u);
}

TEST(I1_HarnessTeeth, RegistryListsEveryVariantAndNamesWhatCannotRun) {
  const auto all = check::variants();
  // reference, 3 native ISAs x 2 thread counts, the emulated avx512_simde at one, cuda-emu, cuda
  ASSERT_EQ(all.size(), 10u);
  EXPECT_EQ(all.front().label, "reference");
  for (const check::Variant& v : all) {
    if (v.unavailable.empty()) continue;
    EXPECT_THROW(v.make(test::tiny()), Error) << v.label;
  }
  EXPECT_THROW(check::variant("avx9_t1"), Error);
  const check::Variant c = check::variant("cuda");
  const auto names = backend_names();
  EXPECT_EQ(c.unavailable.empty(), std::find(names.begin(), names.end(), "cuda") != names.end()) << c.unavailable;
}
