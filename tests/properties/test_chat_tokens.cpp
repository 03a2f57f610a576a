// Raw per-message "tokens" in conversation files (spec/model.md M5): how counterexamples
// that are not valid chat text reach `akv witness`.
#include <gtest/gtest.h>

#include "readers/conversation/chat_parse.hpp"
#include "reference/chat.hpp"
#include "reference/error.hpp"
#include "verify/witness.hpp"

namespace akv {
namespace {

void expect_bad(const std::string& json, const std::string& fragment) {
  try {
    parse_conversation(json);
    ADD_FAILURE() << "accepted: " << json;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kBadInput);
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(M5_RawTokens, AreTheSpanExactly) {
  const Conversation c = parse_conversation(R"({"messages": [{"role": "user", "tokens": [0, 260, 287, 97]},
                                                          {"role": "assistant", "content": "hi"}]})");
  ASSERT_EQ(c.messages.size(), 2u);
  EXPECT_EQ(encode_message(c.messages[0]), (std::vector<Token>{0, 260, 287, 97}));
  EXPECT_FALSE(c.messages[1].tokens.has_value());
  EXPECT_EQ(encode_message(c.messages[1]).front(), 258);  // text messages keep M5's encoding
}

TEST(M5_RawTokens, RoundTripThroughJson) {
  const Conversation c = parse_conversation(R"({"messages": [{"role": "tool", "tokens": [5, 6]}, {"role": "user", "content": "x"}], "poisoned": [0]})");
  const Conversation d = parse_conversation(conversation_to_json(c));
  ASSERT_EQ(d.messages.size(), 2u);
  EXPECT_EQ(d.messages[0].role, "tool");
  EXPECT_EQ(*d.messages[0].tokens, (std::vector<Token>{5, 6}));
  EXPECT_EQ(d.messages[1].content, "x");
  EXPECT_EQ(d.poisoned, std::vector<size_t>{0});
}

TEST(M5_RawTokens, ParserErrorsNameTheField) {
  expect_bad(R"({"messages": [{"role": "user", "tokens": 5}]})", "messages[0].tokens: expected an array");
  expect_bad(R"({"messages": [{"role": "user", "tokens": []}]})", "messages[0].tokens: empty");
  expect_bad(R"({"messages": [{"role": "user", "tokens": [1, "a"]}]})", "messages[0].tokens[1]");
  expect_bad(R"({"messages": [{"role": "user", "tokens": [1, 2.5]}]})", "messages[0].tokens[1]");
  expect_bad(R"({"messages": [{"role": "user", "tokens": [-1]}]})", "messages[0].tokens[0]");
  expect_bad(R"({"messages": [{"role": "user", "tokens": [2147483648]}]})", "messages[0].tokens[0]");
  expect_bad(R"({"messages": [{"role": "user", "content": "x", "tokens": [1]}]})", "carries no content");
  expect_bad(R"({"messages": [{"role": "tool", "name": "f", "tokens": [1]}]})", "carries no content");
  expect_bad(R"({"messages": [{"role": "assistant", "tokens": [1], "tool_calls": [{"function": {"name": "f"}}]}]})",
             "carries no content");
}

TEST(M5_RawTokens, NullMeansAbsent) {
  const Conversation c = parse_conversation(R"({"messages": [{"role": "user", "content": "a", "tokens": null}]})");
  EXPECT_FALSE(c.messages[0].tokens.has_value());
}

TEST(M5_RawTokens, OutOfVocabularyIsRejectedByTheSession) {
  const Conversation c = parse_conversation(R"({"messages": [{"role": "user", "tokens": [1, 288]}, {"role": "user", "tokens": [2]}]})");
  WitnessOptions opt;
  opt.model = "tiny";
  opt.evict = {1};
  try {
    run_witness(c, opt);
    ADD_FAILURE() << "token 288 accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidToken);
  }
}

}  // namespace
}  // namespace akv
