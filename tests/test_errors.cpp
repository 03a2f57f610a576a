// Failed operations are typed errors and leave the session bitwise unchanged
// (spec/operations.md O6).
#include <gtest/gtest.h>

#include <functional>

#include "reference/error.hpp"
#include "support.hpp"
#include "runtime/digest.hpp"

using namespace akv;

namespace {

// Runs `op` on `s`, expects Error(code) with a message naming `needle`, and the same state.
void expect_unchanged_error(Session& s, ErrorCode code, const std::string& needle, const std::function<void()>& op) {
  const std::string before = session_state_sha256(s);
  const size_t size = s.size();
  try {
    op();
    ADD_FAILURE() << "no error thrown";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
  EXPECT_EQ(s.size(), size);
  EXPECT_EQ(session_state_sha256(s), before);
}

Session small_session() {
  Session s(test::tiny_reference());
  s.append(1, std::vector<Token>{257, 'h', 'i', 260});
  s.append(2, std::vector<Token>{259, 'x', 260});
  s.append(3, std::vector<Token>{258, 'o', 'k', 260});
  return s;
}

}  // namespace

TEST(O6_Errors, UnknownSpan) {
  Session s = small_session();
  expect_unchanged_error(s, ErrorCode::kUnknownSpan, "span 9", [&] { s.evict(9); });
  const SpanId mixed[] = {2, 9};  // a valid span beside an unknown one: nothing is evicted
  expect_unchanged_error(s, ErrorCode::kUnknownSpan, "span 9", [&] { s.evict(mixed); });
}

TEST(O6_Errors, EvictingTwice) {
  Session s = small_session();
  s.evict(2);
  expect_unchanged_error(s, ErrorCode::kSpanEvicted, "span 2", [&] { s.evict(2); });
  expect_unchanged_error(s, ErrorCode::kSpanEvicted, "span 2", [&] { s.append(2, std::vector<Token>{1}); });
}

TEST(O6_Errors, DuplicateInOneRequest) {
  Session s = small_session();
  const SpanId twice[] = {2, 2};
  expect_unchanged_error(s, ErrorCode::kDuplicateSpan, "span 2", [&] { s.evict(twice); });
}

TEST(O6_Errors, EmptyInput) {
  Session s = small_session();
  expect_unchanged_error(s, ErrorCode::kEmptyInput, "no tokens", [&] { s.append(4, std::vector<Token>{}); });
  expect_unchanged_error(s, ErrorCode::kEmptyInput, "no spans", [&] { s.evict(std::span<const SpanId>{}); });
}

TEST(O6_Errors, InvalidToken) {
  Session s = small_session();
  expect_unchanged_error(s, ErrorCode::kInvalidToken, "288", [&] { s.append(4, std::vector<Token>{5, 288}); });
  expect_unchanged_error(s, ErrorCode::kInvalidToken, "-1", [&] { s.append(4, std::vector<Token>{-1}); });
}

TEST(O6_Errors, ContextOverflow) {
  Session s = small_session();
  const int ctx = s.model().config.max_ctx;
  std::vector<Token> too_many(ctx - s.size() + 1, 'a');
  expect_unchanged_error(s, ErrorCode::kContextOverflow, std::to_string(ctx), [&] { s.append(4, too_many); });
}

TEST(O6_Errors, AppendToAnInteriorSpan) {
  Session s = small_session();
  expect_unchanged_error(s, ErrorCode::kSpanNotAtTail, "span 1", [&] { s.append(1, std::vector<Token>{'a'}); });
}

TEST(O6_Errors, LogitsOfAnEmptySession) {
  Session s(test::tiny_reference());
  expect_unchanged_error(s, ErrorCode::kEmptyCache, "no tokens", [&] { s.logits(); });
}

TEST(O2_Append, ExtendingTheLastSpanIsDecode) {
  // Appending to the tail span grows it; the span table and logits follow.
  Session s(test::tiny_reference()), once(test::tiny_reference());
  s.append(1, std::vector<Token>{257, 'a'});
  s.append(1, std::vector<Token>{'b'});
  once.append(1, std::vector<Token>{257, 'a', 'b'});
  ASSERT_EQ(s.spans().size(), 1u);
  EXPECT_EQ(s.spans()[0].length, 3u);
  EXPECT_EQ(session_state_sha256(s), session_state_sha256(once));
}

TEST(O4_Logits, NextTokenLogitsAreTheLastRow) {
  Session s(test::tiny_reference());
  const auto rows = s.append(1, std::vector<Token>{257, 'a', 'b'});
  const size_t vocab = s.model().config.vocab;
  ASSERT_EQ(rows.size(), 3 * vocab);
  ASSERT_EQ(s.logits().size(), vocab);
  EXPECT_TRUE(std::equal(s.logits().begin(), s.logits().end(), rows.end() - vocab));
}

namespace akv {
namespace {
// The gate passes a child's error on by its name (gate/runner.cpp): every name maps back.
TEST(O6_Errors, EveryCodeNameMapsBackToItsCode) {
  int named = 0;
  for (int i = 0; std::string_view(error_code_name(static_cast<ErrorCode>(i))) != "unknown"; ++i, ++named) {
    ErrorCode c;
    ASSERT_TRUE(error_code_from_name(error_code_name(static_cast<ErrorCode>(i)), c)) << i;
    EXPECT_EQ(c, static_cast<ErrorCode>(i));
  }
  EXPECT_GE(named, static_cast<int>(ErrorCode::kBadKernels) + 1);
  ErrorCode c;
  EXPECT_FALSE(error_code_from_name("no_such_code", c));
  EXPECT_FALSE(error_code_from_name("", c));
}
}  // namespace
}  // namespace akv
