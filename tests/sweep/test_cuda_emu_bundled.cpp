// The sweep of spec/kernels-cuda.md G9 (label sweep: `ctest --preset release -L sweep`; about
// 400 CPU-seconds on 2 cores, so outside the README's test command, which runs G9's eviction on
// four bundled conversations, test_invariance.cpp).
#include <gtest/gtest.h>

#include <limits>

#include "optimized/cuda/emu/emu_backend.hpp"
#include "harness_support.hpp"
#include "cuda_emu_support.hpp"
#include "support.hpp"
#include "verify/check/invariance.hpp"
#include "verify/check/run.hpp"
#include "verify/check/variants.hpp"

using namespace akv;

using test::emu;

// E1 and I1 through cuda-emu on every bundled conversation (tiny model): evicting the middle
// span equals never having seen it (both sessions on one backend; G8_Mirror runs three
// victims on the device), and the whole conversation in one call equals it span by span with
// the last five tokens decoded one at a time (cache bytes and logits). Split-K (G2) runs in
// every matmul of tiny (n = 32 and 64: two and four chunks). About 4 forward passes of each
// conversation: the scalar emulation's attention is quadratic in its length.
class G9_BundledConversation : public ::testing::TestWithParam<std::string> {};

TEST_P(G9_BundledConversation, EvictEqualsNeverAndChunkingsAgree) {
  const auto spans = test::spans_of(GetParam());
  ASSERT_GE(spans.size(), 3u) << GetParam();
  const size_t victim = spans.size() / 2;
  test::expect_passed(check::evict_equals_never(check::variant("cuda_emu"), test::tiny(), spans, {victim},
                                                GetParam() + " span " + std::to_string(victim), false));
  std::vector<Token> all;
  std::vector<size_t> chunks;
  for (const auto& sp : spans) all.insert(all.end(), sp.begin(), sp.end()), chunks.push_back(sp.size());
  for (int i = 0; i < 5 && chunks.back() > 1; ++i) --chunks.back(), chunks.push_back(1);
  auto b = emu();
  EXPECT_EQ(check::run_diff(check::run_chunked(*b, all, {all.size()}), check::run_chunked(*b, all, chunks)), "")
      << "one call vs span by span with a decode tail";
}

INSTANTIATE_TEST_SUITE_P(Bundled, G9_BundledConversation, ::testing::ValuesIn(test::bundled_conversations()),
                         [](const auto& i) { return i.param.substr(0, 4); });
