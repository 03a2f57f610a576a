// The turn templates of Qwen2.5, Llama 3, Phi-3 and Qwen3 and their encoder (spec/tokenizer.md
// CT6-CT10, CT16). The expected texts are jinja2's renderings of the published templates (llama.cpp's
// models/templates copies; scripts/crosscheck-templates renders them again on every bundled
// conversation), pasted as literals; no model or vocab file is needed.
#include <gtest/gtest.h>

#include "readers/conversation/chat_parse.hpp"
#include "readers/tokenizer/spm_tokenizer.hpp"
#include "chat/turn_encoder.hpp"
#include "chat/turn_templates.hpp"
#include "reference/error.hpp"
#include "tests/bad_model_support.hpp"
#include "tests/text_file.hpp"
#include "verify/witness.hpp"

using namespace akv;
using namespace akv::readers;
using namespace akv::chat;

namespace {

// System (with Unicode whitespace to trim), a named user whose text spells a special token, an
// assistant with content and a tool call (JSON arguments: UTF-8, a float, an exponent, nesting,
// an escape), a tool result, a call whose arguments are not JSON, its result, a reply.
const char* kConv = R"({"messages": [
 {"role": "system", "content": "  Be brief.\u3000\n"},
 {"role": "user", "content": "Pay <|im_end|> the bill\u00a0", "name": "alex"},
 {"role": "assistant", "content": "On it.", "tool_calls": [
   {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\": \"bill \u00e9.txt\", \"n\": 2, \"x\": 1.50, \"y\": 1e-5, \"z\": [true, null, {\"k\": \"a\\nb\"}]}"}}]},
 {"role": "tool", "tool_call_id": "c1", "name": "read_file", "content": "amount: 100\n\"quoted\""},
 {"role": "assistant", "content": "", "tool_calls": [
   {"id": "c2", "type": "function", "function": {"name": "pay", "arguments": "not json"}}]},
 {"role": "tool", "tool_call_id": "c2", "content": "ok"},
 {"role": "assistant", "content": "Done."}
]})";

// No system message, two calls in one message, three tool results in a row.
const char* kGroup = R"({"messages": [
 {"role": "user", "content": "hi"},
 {"role": "assistant", "content": "", "tool_calls": [
   {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}},
   {"id": "b", "type": "function", "function": {"name": "g", "arguments": "{\"q\": \"\\u0001\\t\"}"}}]},
 {"role": "tool", "content": "r1"},
 {"role": "tool", "content": "r2"},
 {"role": "tool", "content": "r3"},
 {"role": "assistant", "content": "ok"}
]})";

std::string text(const std::vector<TurnPiece>& pieces) {
  std::string s;
  for (const auto& p : pieces) s += p.text;
  return s;
}

std::string whole(const TurnRendering& r) {
  std::string s = text(r.preamble);
  for (const auto& m : r.messages) s += text(m);
  return s;
}

void expect_refused(TurnTemplate t, const std::string& json, const std::string& what) {
  try {
    render_turns(t, parse_conversation(json));
    ADD_FAILURE() << "accepted; expected: " << what;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kBadInput);
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
}

}  // namespace

TEST(CT7_Qwen25Template, RendersAsItsJinjaDoes) {
  const TurnRendering r = render_turns(TurnTemplate::kQwen25, parse_conversation(kConv));
  EXPECT_EQ(whole(r),
            "<|im_start|>system\n  Be brief.\u3000\n<|im_end|>\n<|im_start|>user\nPay <|im_end|> the bill\u00a0<|im_end|>\n"
            "<|im_start|>assistant\nOn it.\n<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"bill "
            "\u00e9.txt\", \"n\": 2, \"x\": 1.5, \"y\": 1e-05, \"z\": [true, null, {\"k\": \"a\\nb\"}]}}\n</tool_call><|im_end|>\n"
            "<|im_start|>user\n<tool_response>\namount: 100\n\"quoted\"\n</tool_response><|im_end|>\n<|im_start|>assistant\n"
            "<tool_call>\n{\"name\": \"pay\", \"arguments\": \"not json\"}\n</tool_call><|im_end|>\n<|im_start|>user\n"
            "<tool_response>\nok\n</tool_response><|im_end|>\n<|im_start|>assistant\nDone.<|im_end|>\n");
  EXPECT_TRUE(r.preamble.empty());
  // Each message is its own turn; the special-token text in message 1 is text, not a special.
  EXPECT_EQ(text(r.messages[3]), "<|im_start|>user\n<tool_response>\namount: 100\n\"quoted\"\n</tool_response><|im_end|>\n");
  for (const TurnPiece& p : r.messages[1]) EXPECT_TRUE(!p.special || p.text == "<|im_start|>" || p.text == "<|im_end|>");
  EXPECT_EQ(r.messages[1][1].text, "user\nPay <|im_end|> the bill\u00a0");
  EXPECT_EQ(r.ignored, (std::vector<std::string>{"messages[1].name", "messages[2].tool_calls[0].id", "messages[3].name",
                                                 "messages[3].tool_call_id", "messages[4].tool_calls[0].id",
                                                 "messages[5].tool_call_id"}));
}

TEST(CT7_Qwen25Template, ToolResultsInARowShareOneUserTurn) {
  const TurnRendering r = render_turns(TurnTemplate::kQwen25, parse_conversation(kGroup));
  EXPECT_EQ(whole(r),
            "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n"
            "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n"
            "</tool_call>\n<tool_call>\n{\"name\": \"g\", \"arguments\": {\"q\": \"\\u0001\\t\"}}\n</tool_call><|im_end|>\n"
            "<|im_start|>user\n<tool_response>\nr1\n</tool_response>\n<tool_response>\nr2\n</tool_response>\n"
            "<tool_response>\nr3\n</tool_response><|im_end|>\n<|im_start|>assistant\nok<|im_end|>\n");
  // The default system prompt belongs to no message; the group's opener and closer to its ends.
  EXPECT_EQ(text(r.preamble), "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n");
  EXPECT_EQ(text(r.messages[2]), "<|im_start|>user\n<tool_response>\nr1\n</tool_response>");
  EXPECT_EQ(text(r.messages[3]), "\n<tool_response>\nr2\n</tool_response>");
  EXPECT_EQ(text(r.messages[4]), "\n<tool_response>\nr3\n</tool_response><|im_end|>\n");
}

TEST(CT7_Qwen25Template, WhatItCannotCarryIsRefusedByName) {
  expect_refused(TurnTemplate::kQwen25, R"({"messages": [{"role": "developer", "content": "x"}]})", "role 'developer'");
  expect_refused(TurnTemplate::kQwen25, R"({"messages": [{"role": "assistant", "content": "", "refusal": "no"}]})",
                 "a refusal");
  expect_refused(TurnTemplate::kQwen25,
                 R"({"messages": [{"role": "assistant", "content": "", "tool_calls": [{"id": "1", "type": "custom",
                     "custom": {"name": "c", "input": "x"}}]}]})",
                 "custom (free-form) tool call");
  expect_refused(TurnTemplate::kQwen25,
                 R"({"messages": [{"role": "assistant", "content": "", "tool_calls": [{"id": "1", "type": "function",
                     "function": {"name": "c", "arguments": "{\"n\": 123456789012345678901}"}}]}]})",
                 "does not fit 64 bits");
}

TEST(CT8_Llama3Template, RendersAsItsJinjaDoes) {
  const TurnRendering r = render_turns(TurnTemplate::kLlama3, parse_conversation(kConv));
  EXPECT_EQ(whole(r),
            "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\n"
            "Today Date: 26 Jul 2024\n\nBe brief.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nPay <|im_end|> the bill"
            "<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n{\"name\": \"read_file\", \"parameters\": {\"path\": "
            "\"bill \u00e9.txt\", \"n\": 2, \"x\": 1.5, \"y\": 1e-05, \"z\": [true, null, {\"k\": \"a\\nb\"}]}}<|eot_id|>"
            "<|start_header_id|>ipython<|end_header_id|>\n\n\"amount: 100\\n\\\"quoted\\\"\"<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n{\"name\": \"pay\", \"parameters\": \"not json\"}<|eot_id|>"
            "<|start_header_id|>ipython<|end_header_id|>\n\n\"ok\"<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"
            "Done.<|eot_id|>");
  EXPECT_EQ(text(r.preamble), "<|begin_of_text|>");
  // The assistant's text beside its call never reaches the model: listed, not dropped silently.
  EXPECT_NE(std::find(r.ignored.begin(), r.ignored.end(), "messages[2].content"), r.ignored.end());
  // Without a system message, the template's system turn (the dates) belongs to the preamble.
  Conversation c = parse_conversation(kConv);
  c.messages.erase(c.messages.begin());
  const TurnRendering n = render_turns(TurnTemplate::kLlama3, c);
  EXPECT_EQ(text(n.preamble),
            "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December 2023\n"
            "Today Date: 26 Jul 2024\n\n<|eot_id|>");
}

TEST(CT8_Llama3Template, TwoCallsInOneMessageAreRefusedAsTheTemplateRaises) {
  expect_refused(TurnTemplate::kLlama3, kGroup, "messages[1]: 2 tool calls; the template takes one");
}

TEST(CT9_Phi3Template, RendersAsTheVocabFilesJinjaDoes) {
  const TurnRendering r = render_turns(
      TurnTemplate::kPhi3,
      parse_conversation(R"({"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"},
                                          {"role": "user", "content": " x "}]})"));
  EXPECT_EQ(whole(r), "<s><|user|>\nhi<|end|>\n<|assistant|>\nyo<|end|>\n<|user|>\n x <|end|>\n<|assistant|>\n");
  EXPECT_EQ(text(r.messages[1]), "yo<|end|>\n");
  expect_refused(TurnTemplate::kPhi3, R"({"messages": [{"role": "system", "content": "x"}]})", "role 'system'");
  expect_refused(TurnTemplate::kPhi3, kConv, "messages[0]: role 'system'");
  expect_refused(TurnTemplate::kPhi3,
                 R"({"messages": [{"role": "assistant", "content": "", "tool_calls": [{"id": "1", "type": "function",
                     "function": {"name": "c", "arguments": "{}"}}]}]})",
                 "tool calls");
}

TEST(CT16_Qwen3Template, RendersAsItsJinjaDoes) {
  // No default system turn; arguments that are not JSON are printed as they are (the template's
  // `is string` branch); the last assistant message after the last query opens an empty think block.
  const TurnRendering r = render_turns(TurnTemplate::kQwen3, parse_conversation(kConv));
  EXPECT_EQ(whole(r),
            "<|im_start|>system\n  Be brief.\u3000\n<|im_end|>\n<|im_start|>user\nPay <|im_end|> the bill\u00a0<|im_end|>\n"
            "<|im_start|>assistant\nOn it.\n<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"bill "
            "\u00e9.txt\", \"n\": 2, \"x\": 1.5, \"y\": 1e-05, \"z\": [true, null, {\"k\": \"a\\nb\"}]}}\n</tool_call><|im_end|>\n"
            "<|im_start|>user\n<tool_response>\namount: 100\n\"quoted\"\n</tool_response><|im_end|>\n<|im_start|>assistant\n"
            "<tool_call>\n{\"name\": \"pay\", \"arguments\": not json}\n</tool_call><|im_end|>\n<|im_start|>user\n"
            "<tool_response>\nok\n</tool_response><|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\nDone.<|im_end|>\n");
  const TurnRendering g = render_turns(TurnTemplate::kQwen3, parse_conversation(kGroup));
  EXPECT_TRUE(g.preamble.empty());
  EXPECT_EQ(text(g.messages[0]), "<|im_start|>user\nhi<|im_end|>\n");
  EXPECT_EQ(text(g.messages[3]), "\n<tool_response>\nr2\n</tool_response>");
  EXPECT_EQ(text(g.messages[5]), "<|im_start|>assistant\n<think>\n\n</think>\n\nok<|im_end|>\n");
  expect_refused(TurnTemplate::kQwen3, R"({"messages": [{"role": "developer", "content": "x"}]})", "role 'developer'");
}

TEST(CT16_Qwen3Template, ReasoningIsKeptOnlyAfterTheLastUserQuery) {
  const TurnRendering r = render_turns(TurnTemplate::kQwen3, parse_conversation(R"({"messages": [
   {"role": "user", "content": "q1"},
   {"role": "assistant", "content": "<think>\nr1\n</think>\n\na1"},
   {"role": "user", "content": "q2"},
   {"role": "assistant", "content": "pre<think>\n\nr2\n</think>x", "tool_calls": [
     {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{\"a\": 1}"}},
     {"id": "c2", "type": "function", "function": {"name": "g", "arguments": "not json"}}]},
   {"role": "tool", "tool_call_id": "c1", "content": "r"},
   {"role": "tool", "tool_call_id": "c2", "content": "s"},
   {"role": "assistant", "content": "\nfinal"}]})"));
  EXPECT_EQ(whole(r),
            "<|im_start|>user\nq1<|im_end|>\n<|im_start|>assistant\na1<|im_end|>\n<|im_start|>user\nq2<|im_end|>\n"
            "<|im_start|>assistant\n<think>\nr2\n</think>\n\nx\n<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}}\n"
            "</tool_call>\n<tool_call>\n{\"name\": \"g\", \"arguments\": not json}\n</tool_call><|im_end|>\n<|im_start|>user\n"
            "<tool_response>\nr\n</tool_response>\n<tool_response>\ns\n</tool_response><|im_end|>\n<|im_start|>assistant\n"
            "<think>\n\n</think>\n\nfinal<|im_end|>\n");
  // r1 (before the last query) and "pre" (before <think>) never reach the model: listed.
  EXPECT_EQ(r.ignored, (std::vector<std::string>{"messages[1].content (reasoning)", "messages[3].tool_calls[0].id",
                                                 "messages[3].tool_calls[1].id", "messages[3].content (reasoning)",
                                                 "messages[4].tool_call_id", "messages[5].tool_call_id"}));
}

TEST(CT16_Qwen3Template, ToolsOpenTheSystemTurn) {
  const char* tools = R"("tools": [{"type": "function", "function": {"name": "f", "description": "d", "parameters":
      {"type": "object", "properties": {"a": {"type": "integer"}}}}}])";
  const std::string block =
      "# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function "
      "signatures within <tools></tools> XML tags:\n<tools>\n{\"type\": \"function\", \"function\": {\"name\": \"f\", "
      "\"description\": \"d\", \"parameters\": {\"type\": \"object\", \"properties\": {\"a\": {\"type\": \"integer\"}}}}}\n"
      "</tools>\n\nFor each function call, return a json object with function name and arguments within "
      "<tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": "
      "<args-json-object>}\n</tool_call><|im_end|>\n";
  // A user message that is a tool response wrapped by hand is no query: the assistant before it
  // stays after the last query, and, not last and without reasoning, renders plain.
  const std::string rest =
      R"("messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "", "tool_calls": [{"id": "c1",
      "type": "function", "function": {"name": "f", "arguments": "{\"a\": 1}"}}]}, {"role": "tool", "tool_call_id": "c1",
      "content": "x"}, {"role": "user", "content": "<tool_response>y</tool_response>"}])";
  const std::string turns =
      "<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\n<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}}\n"
      "</tool_call><|im_end|>\n<|im_start|>user\n<tool_response>\nx\n</tool_response><|im_end|>\n<|im_start|>user\n"
      "<tool_response>y</tool_response><|im_end|>\n";
  const TurnRendering bare = render_turns(TurnTemplate::kQwen3, parse_conversation("{" + std::string(tools) + ", " + rest + "}"));
  EXPECT_EQ(text(bare.preamble), "<|im_start|>system\n" + block);
  EXPECT_EQ(whole(bare), "<|im_start|>system\n" + block + turns);
  const std::string with_system = R"("messages": [{"role": "system", "content": "S"}, )" + rest.substr(std::string(R"("messages": [)").size());
  const TurnRendering sys = render_turns(TurnTemplate::kQwen3, parse_conversation("{" + std::string(tools) + ", " + with_system + "}"));
  EXPECT_TRUE(sys.preamble.empty());
  EXPECT_EQ(text(sys.messages[0]), "<|im_start|>system\nS\n\n" + block);
  EXPECT_EQ(whole(sys), "<|im_start|>system\nS\n\n" + block + turns);
}

TEST(CT6_TurnTemplates, NamesAndRawTokens) {
  EXPECT_EQ(turn_template_names(), (std::vector<std::string>{"qwen2.5", "llama3", "phi3", "qwen3"}));
  for (const std::string& n : turn_template_names()) EXPECT_EQ(turn_template_names()[static_cast<size_t>(turn_template_by_name(n))], n);
  EXPECT_THROW(turn_template_by_name("chatml2"), Error);
  // A raw-token message renders nothing and is no tool result: the results around it are
  // turns of their own.
  const TurnRendering r = render_turns(
      TurnTemplate::kQwen25, parse_conversation(R"({"messages": [{"role": "tool", "content": "a"}, {"role": "tool", "tokens": [5]},
                                                                  {"role": "tool", "content": "b"}]})"));
  EXPECT_TRUE(r.messages[1].empty());
  EXPECT_EQ(text(r.messages[0]), "<|im_start|>user\n<tool_response>\na\n</tool_response><|im_end|>\n");
  EXPECT_EQ(text(r.messages[2]), "<|im_start|>user\n<tool_response>\nb\n</tool_response><|im_end|>\n");
}

TEST(CT6_TurnTemplates, PythonJsonAndStrip) {
  EXPECT_EQ(python_json_dumps(R"({"b":1,"a":[1.0,-0.0,1E+2,0.0001,1e-05,12345678901234567890],"c":"\u00e9\u001f\"\\/"})"),
            "{\"b\": 1, \"a\": [1.0, -0.0, 100.0, 0.0001, 1e-05, 12345678901234567890], \"c\": \"\u00e9\\u001f\\\"\\\\/\"}");
  EXPECT_EQ(python_json_dumps(R"({"k": 1, "k": 2, "j": 3})"), "{\"k\": 2, \"j\": 3}");  // Python: last value, first place
  EXPECT_EQ(python_json_dumps("1e16"), "1e+16");
  EXPECT_EQ(python_json_dumps("123456789012345678.5"), "1.2345678901234568e+17");
  EXPECT_THROW(python_json_dumps("[123456789012345678901]"), Error);
  EXPECT_THROW(python_json_dumps("{"), Error);
  EXPECT_EQ(python_json_string("a\nb\x7f\u2028"), "\"a\\nb\x7f\u2028\"");
  EXPECT_EQ(python_strip("\x1c \t\u3000\u00a0x y\u2029\u0085\n"), "x y");
  EXPECT_EQ(python_strip("\u200b x"), "\u200b x");  // zero-width space is not whitespace to Python
  EXPECT_EQ(python_strip(" \xff "), "\xff");
  EXPECT_EQ(python_strip(" \t "), "");
}

namespace {

// A tiny byte-level BPE vocabulary: bytes, merges that can cross a message boundary ("r" "\n"),
// and the specials of the Qwen2.5 template as control tokens.
struct TinyBpe {
  std::vector<std::string> tokens;
  std::vector<std::string> merges;
  std::vector<int32_t> types;
  explicit TinyBpe(bool with_im_end = true) {
    for (int b = 0; b < 256; ++b) tokens.push_back(byte_level_char(static_cast<uint8_t>(b)));
    const std::string nl = byte_level_char('\n');
    merges = {">" + std::string(" ") + nl};
    tokens.push_back(">" + nl);
    tokens.push_back("<|im_start|>");
    if (with_im_end) tokens.push_back("<|im_end|>");
    types.assign(tokens.size(), 1);
    for (size_t i = 257; i < tokens.size(); ++i) types[i] = 3;
  }
  BpeTokenizer make() const { return BpeTokenizer(tokens, merges, types, "qwen2", std::nullopt, std::nullopt, "tiny"); }
};

}  // namespace

TEST(CT10_TurnEncoder, RunsAreTokenizedWholeAndEachTokenGoesToItsFirstBytesMessage) {
  const auto e = make_turn_encoder(TurnTemplate::kQwen25, TinyBpe().make(), "tiny");
  const Conversation c = parse_conversation(kGroup);
  const EncodedConversation enc = e->encode(c);
  ASSERT_EQ(enc.spans.size(), c.messages.size());
  // ">\n" is one token across the boundary of messages 2 and 3: it is message 2's, so message 3
  // starts at "<tool_response>", and the whole sequence is the tokens of the whole rendering.
  const Token gt_nl = 256;
  EXPECT_EQ(enc.spans[2].back(), gt_nl);
  EXPECT_EQ(e->render({enc.spans[3].front()}), "<");
  std::vector<Token> all = enc.preamble;
  for (const auto& s : enc.spans) all.insert(all.end(), s.begin(), s.end());
  std::vector<Token> want;
  const TurnRendering r = render_turns(TurnTemplate::kQwen25, c);
  std::string run;
  const BpeTokenizer tok = TinyBpe().make();
  const auto flush = [&] {
    const auto ids = tok.encode(run);
    want.insert(want.end(), ids.begin(), ids.end());
    run.clear();
  };
  std::vector<TurnPiece> pieces = r.preamble;
  for (const auto& m : r.messages) pieces.insert(pieces.end(), m.begin(), m.end());
  for (const TurnPiece& p : pieces) {
    if (!p.special) { run += p.text; continue; }
    flush();
    want.push_back(*tok.find(p.text));
  }
  flush();
  EXPECT_EQ(all, want);
  // Special-token text inside a message stays text (T6).
  const EncodedConversation k = e->encode(parse_conversation(R"({"messages": [{"role": "user", "content": "<|im_end|>"}]})"));
  int ends = 0;
  for (Token t : k.spans[0]) ends += e->render({t}) == "<|im_end|>";
  EXPECT_EQ(ends, 1);
  EXPECT_EQ(e->generation_prompt().front(), *tok.find("<|im_start|>"));
}

TEST(CT10_TurnEncoder, AMissingSpecialIsBadModelNamingIt) {
  test::expect_bad_model([] { make_turn_encoder(TurnTemplate::kQwen25, TinyBpe(false).make(), "tiny"); },
                         "<|im_end|> is not a control token");
  test::expect_bad_model([] { make_turn_encoder(TurnTemplate::kLlama3, TinyBpe().make(), "tiny"); },
                         "<|begin_of_text|> is not a control token");
}

TEST(CT10_TurnEncoder, Phi3StripsWhitespaceAfterItsTurnTokens) {
  // SentencePiece: <unk>, <s>, </s>, the 256 byte tokens, U+2581, then Phi-3's specials.
  std::vector<std::string> tokens{"<unk>", "<s>", "</s>"};
  std::vector<int32_t> types{2, 3, 3};
  static const char* hex = "0123456789ABCDEF";
  for (int b = 0; b < 256; ++b) {
    tokens.push_back(std::string("<0x") + hex[b >> 4] + hex[b & 15] + ">");
    types.push_back(6);
  }
  tokens.push_back("\xE2\x96\x81");
  types.push_back(1);
  for (const char* s : {"<|user|>", "<|end|>", "<|assistant|>"}) {
    tokens.push_back(s);
    types.push_back(3);
  }
  const SpmTokenizer tok(tokens, {}, types, {1, 2, true, true}, "tiny");
  const auto e = make_turn_encoder(TurnTemplate::kPhi3, tok, "tiny");
  const EncodedConversation enc =
      e->encode(parse_conversation(R"({"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "\n yo"}]})"));
  // llama.cpp's RSTRIP: "\nhi" after <|user|> is "hi" (then the space prefix); the "\n" after
  // <|assistant|> and the assistant's own leading whitespace go, so its span starts at "yo".
  EXPECT_EQ(e->render(enc.preamble), "<s>");
  EXPECT_EQ(e->render(enc.spans[0]), "<|user|> hi<|end|><|assistant|>");
  EXPECT_EQ(e->render(enc.spans[1]), " yo<|end|>");
  EXPECT_TRUE(e->generation_prompt().empty());
}

TEST(CT6_TurnTemplates, EvictionUnderAGroupingTemplateIsCertifiedByO8) {
  const auto e = make_turn_encoder(TurnTemplate::kQwen25, TinyBpe().make(), "tiny");
  const Conversation c = parse_conversation(kGroup);
  const EncodedConversation enc = e->encode(c);
  // The middle result of three: the others render as they were.
  EXPECT_NO_THROW(check_never_shown_rendering(*e, c, enc, {3}));
  EXPECT_NO_THROW(check_never_shown_rendering(*e, c, enc, {5}));
  // The first opens the shared user turn and the last closes it: without either, the template
  // renders the rest differently, so the kept spans are no real run (O8).
  EXPECT_THROW(check_never_shown_rendering(*e, c, enc, {2}), Error);
  EXPECT_THROW(check_never_shown_rendering(*e, c, enc, {4}), Error);
  // Evicting all three leaves the rest as rendered.
  EXPECT_NO_THROW(check_never_shown_rendering(*e, c, enc, {2, 3, 4}));
}

TEST(CT11_TemplateCrosscheck, CoversEveryTemplate) {
  // Every template akv renders is compared with jinja2 and llama.cpp by scripts/crosscheck-templates.
  const std::string check = test::read_text(std::filesystem::path(AKV_SOURCE_DIR) / "tests/tools/template_check.py");
  for (const std::string& name : turn_template_names())
    EXPECT_NE(check.find("(\"" + name + "\", \"ggml-vocab-"), std::string::npos) << name << " is not crosschecked";
  const std::string script = test::read_text(std::filesystem::path(AKV_SOURCE_DIR) / "scripts/crosscheck-templates");
  EXPECT_NE(script.find("tests/tools/template_check.py"), std::string::npos);
  EXPECT_NE(script.find("tests/tools/template_cases"), std::string::npos);
}
