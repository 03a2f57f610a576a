// Tokenizer and chat format (spec/model.md M5): one span per message, documented serialisation.
#include <gtest/gtest.h>

#include "readers/conversation/chat_parse.hpp"
#include "reference/chat.hpp"
#include "reference/error.hpp"
#include "reference/tokenizer.hpp"
#include "support.hpp"

using namespace akv;

namespace {
void expect_bad(const std::string& json, const std::string& needle) {
  try {
    parse_conversation(json);
    ADD_FAILURE() << "accepted: " << json;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kBadInput);
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}
}  // namespace

TEST(M5_ChatFormat, UserMessageIsRoleBytesEnd) {
  Message m;
  m.role = "user";
  m.content = "hé";
  const std::vector<Token> want = {tok::kUser, 'h', 0xC3, 0xA9, tok::kEnd};
  EXPECT_EQ(encode_message(m), want);
}

TEST(M5_ChatFormat, AssistantToolCallsAreInItsSpan) {
  Message m;
  m.role = "assistant";
  m.content = "ok";
  m.tool_calls = {{"c1", "f", "{}"}};
  const std::vector<Token> want = {tok::kAssistant, 'o', 'k', tok::kCall, 'f', tok::kArgs, '{', '}', tok::kId, 'c', '1', tok::kEnd};
  EXPECT_EQ(encode_message(m), want);
  EXPECT_EQ(tok::render(want), "<|assistant|>ok<|call|>f<|args|>{}<|id|>c1<|end|>");
}

TEST(M5_ChatFormat, ToolResultCarriesNameAndCallId) {
  Message m;
  m.role = "tool";
  m.content = "42";
  m.name = "calc";
  m.tool_call_id = "c1";
  EXPECT_EQ(tok::render(encode_message(m)), "<|tool|>calc<|id|>c1<|result|>42<|end|>");
  Message bare = m;
  bare.name.clear();
  bare.tool_call_id.clear();
  EXPECT_EQ(tok::render(encode_message(bare)), "<|tool|><|result|>42<|end|>");
}

TEST(M5_ChatFormat, ParsesOpenAIMessages) {
  const Conversation c = parse_conversation(R"({"messages": [
    {"role": "system", "content": "s"},
    {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
    {"role": "assistant", "content": null, "tool_calls": [{"id": "x", "type": "function",
      "function": {"name": "f", "arguments": "{\"k\": 1}"}}]},
    {"role": "tool", "content": "r", "tool_call_id": "x", "name": "f"}], "poisoned": [3], "tags": ["t"]})");
  ASSERT_EQ(c.messages.size(), 4u);
  EXPECT_EQ(c.messages[1].content, "ab");
  EXPECT_EQ(c.messages[2].content, "");
  ASSERT_EQ(c.messages[2].tool_calls.size(), 1u);
  EXPECT_EQ(c.messages[2].tool_calls[0].arguments, "{\"k\": 1}");
  EXPECT_EQ(c.messages[3].tool_call_id, "x");
  EXPECT_EQ(c.poisoned, std::vector<size_t>{3});
  // Round trip through the serialiser gives the same spans.
  const Conversation back = parse_conversation(conversation_to_json(c));
  ASSERT_EQ(back.messages.size(), c.messages.size());
  for (size_t i = 0; i < c.messages.size(); ++i) EXPECT_EQ(encode_message(back.messages[i]), encode_message(c.messages[i]));
  EXPECT_EQ(back.poisoned, c.poisoned);
}

TEST(M5_ChatFormat, BadInputNamesTheProblem) {
  expect_bad("{\"messages\": [", "malformed JSON");
  expect_bad("[1]", "messages");
  expect_bad("{\"messages\": []}", "empty");
  expect_bad(R"({"messages": [{"role": "robot", "content": "x"}]})", "unknown role 'robot'");
  expect_bad(R"({"messages": [{"content": "x"}]})", "messages[0].role");
  expect_bad(R"({"messages": [{"role": "user", "content": 5}]})", "messages[0].content");
  expect_bad(R"({"messages": [{"role": "user", "content": "x"}], "poisoned": [1]})", "out of range");
  expect_bad(R"({"messages": [{"role": "user", "content": "x"}], "poisoned": [0, 0]})", "repeated");
  expect_bad(R"({"messages": [{"role": "user", "content": "x"}], "poisoned": [-1]})", "poisoned[0]");
  expect_bad(R"({"messages": [{"role": "user", "content": "x", "tool_calls": []}]})", "only assistant");
}

TEST(M5_ChatFormat, EveryBundledConversationParses) {
  for (const char* f : {"ad01_banking_ut0_gpt4omini.json", "ad02_slack_ut16_claude35.json", "ad03_travel_ut2_claude35.json",
                        "ad05_workspace_ut29_claude35.json", "ad06_banking_ut3_llama3_70b.json", "ad08_slack_ut19_claude35.json",
                        "ad09_workspace_ut15_claude35.json", "ad10_clean_banking_ut2_claude35.json",
                        "ad11_clean_workspace_ut34_commandrplus.json", "ia01_dh_base_gmail_read_email.json",
                        "ia02_dh_enhanced_evernote_search.json", "ja01_banking_bill_important_instructions.json",
                        "ja03_clean_banking_march_spending.json"}) {
    const Conversation c = load_conversation(test::example(f));
    size_t total = 0;
    for (const Message& m : c.messages) {
      const auto t = encode_message(m);
      EXPECT_GE(t.size(), 2u);
      EXPECT_EQ(t.back(), tok::kEnd);
      total += t.size();
    }
    EXPECT_LE(total, 16384u) << f;
  }
}
