// Invariance on every backend variant (spec/theorems.md I1, E1; spec/kernels-cpu.md K8, K9,
// K11; spec/kernels-cuda.md G7, G9): the checks of verify/check/invariance.hpp, written once,
// instantiated per backend under its clause: I1_* the reference, K*_ the cpu backend on every
// ISA and thread count, G*_ cuda-emu and cuda. A variant this machine lacks is SKIPPED.
#include <gtest/gtest.h>

#include "harness_support.hpp"
#include "readers/conversation/chat_parse.hpp"
#include "support.hpp"
#include "verify/check/invariance.hpp"

using namespace akv;
using test::expect_passed;

namespace {

class Chunking : public test::VariantTest {};
TEST_P(Chunking, OneCallEqualsNMinusOneThenOne) { expect_passed(check::one_call_equals_then_decode(variant())); }
TEST_P(Chunking, ChunkingsEqualOneCall) { expect_passed(check::chunkings_equal_one_call(variant())); }
TEST_P(Chunking, DecodeEqualsPrefill) { expect_passed(check::decode_equals_prefill(variant())); }
TEST_P(Chunking, LongerThanOneInternalChunk) { expect_passed(check::longer_than_one_chunk(variant())); }
TEST_P(Chunking, EarlierWorkChangesNothing) { expect_passed(check::earlier_work_changes_nothing(variant())); }

class BatchAndThreads : public test::VariantTest {};
TEST_P(BatchAndThreads, EachSessionOfABatchGetsItsAloneBits) { expect_passed(check::batch_equals_alone(variant())); }
TEST_P(BatchAndThreads, ThreadCountChangesNothing) { expect_passed(check::threads_change_nothing(variant())); }

class ScratchPoison : public test::VariantTest {};
TEST_P(ScratchPoison, NaNOrGarbageScratchChangesNothing) { expect_passed(check::scratch_changes_nothing(variant())); }

class EvictEqualsNever : public test::VariantTest {};
TEST_P(EvictEqualsNever, BundledConversationsTinyModel) {
  // The poisoned spans of four conversations (sessions on two backends), and single spans of
  // four (both sessions on one backend).
  for (const char* f : {"ad01_banking_ut0_gpt4omini.json", "ia01_dh_base_gmail_read_email.json",
                        "ia02_dh_enhanced_evernote_search.json", "ja01_banking_bill_important_instructions.json"}) {
    const auto conv = load_conversation(test::example(f));
    ASSERT_FALSE(conv.poisoned.empty()) << f;
    expect_passed(check::evict_equals_never(variant(), check::tiny_model(), test::spans_of(f),
                                            {conv.poisoned.begin(), conv.poisoned.end()}, f));
  }
  for (const auto& [f, span] : {std::pair{"ja01_banking_bill_important_instructions.json", size_t{1}},
                                std::pair{"ja03_clean_banking_march_spending.json", size_t{1}},
                                std::pair{"ia02_dh_enhanced_evernote_search.json", size_t{2}},
                                std::pair{"ia01_dh_base_gmail_read_email.json", size_t{2}}}) {
    const auto spans = test::spans_of(f);
    ASSERT_LT(span, spans.size()) << f;
    expect_passed(check::evict_equals_never(variant(), check::tiny_model(), spans, {span},
                                            std::string(f) + " span " + std::to_string(span), false));
  }
}

TEST_P(EvictEqualsNever, BundledConversationsSmallModel) {
  // The scalar paths (reference, portable, cuda-emu) take most of a minute here; the portable
  // path's bits equal avx2's (K0_IsaAgree), so they run the tiny model's cases only.
  if (!variant().fast) GTEST_SKIP() << "small-model eviction runs on the SIMD and device paths only (time budget); the tiny model covers " << variant().label;
  for (const char* f : {"ia02_dh_enhanced_evernote_search.json", "ja01_banking_bill_important_instructions.json",
                        "ad01_banking_ut0_gpt4omini.json"}) {
    const auto conv = load_conversation(test::example(f));
    ASSERT_FALSE(conv.poisoned.empty()) << f;
    expect_passed(check::evict_equals_never(variant(), check::small_model(), test::spans_of(f),
                                            {conv.poisoned.begin(), conv.poisoned.end()}, f));
  }
}

}  // namespace

INSTANTIATE_TEST_SUITE_P(I1_Invariance, Chunking, ::testing::ValuesIn(check::variants("reference")), test::variant_name);
INSTANTIATE_TEST_SUITE_P(K9_Chunking, Chunking, ::testing::ValuesIn(check::variants("cpu")), test::variant_name);
INSTANTIATE_TEST_SUITE_P(G7_Invariance, Chunking, ::testing::ValuesIn(test::cuda_variants()), test::variant_name);

INSTANTIATE_TEST_SUITE_P(I1_BatchAndThreads, BatchAndThreads, ::testing::ValuesIn(check::variants("reference")), test::variant_name);
INSTANTIATE_TEST_SUITE_P(K8_BatchAndThreads, BatchAndThreads, ::testing::ValuesIn(check::variants("cpu")), test::variant_name);
INSTANTIATE_TEST_SUITE_P(G7_BatchAndThreads, BatchAndThreads, ::testing::ValuesIn(test::cuda_variants()), test::variant_name);

INSTANTIATE_TEST_SUITE_P(I1_ScratchPoison, ScratchPoison, ::testing::ValuesIn(check::variants("reference")), test::variant_name);
INSTANTIATE_TEST_SUITE_P(K11_ScratchPoison, ScratchPoison, ::testing::ValuesIn(check::variants("cpu")), test::variant_name);
INSTANTIATE_TEST_SUITE_P(G7_ScratchPoison, ScratchPoison, ::testing::ValuesIn(test::cuda_variants()), test::variant_name);

INSTANTIATE_TEST_SUITE_P(E1_EvictEqualsNever, EvictEqualsNever, ::testing::ValuesIn(check::variants("reference")), test::variant_name);
INSTANTIATE_TEST_SUITE_P(K9_EvictEqualsNever, EvictEqualsNever, ::testing::ValuesIn(check::variants("cpu")), test::variant_name);
INSTANTIATE_TEST_SUITE_P(G9_EvictEqualsNever, EvictEqualsNever, ::testing::ValuesIn(test::cuda_variants()), test::variant_name);
