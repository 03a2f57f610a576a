// Tools in the prompt and in the reply (spec/tokenizer.md CT14, CT15; spec/input.md IN10): each
// family renders the request's tools where its published template does (the expected texts are
// jinja2's renderings of llama.cpp's copies of the templates, pasted as literals), akv's generic
// form for SmolLM2's ChatML and Gemma, and replies are read back into tool calls.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "chat/tools.hpp"
#include "chat/turn_templates.hpp"
#include "readers/conversation/chat_parse.hpp"
#include "reference/chat.hpp"
#include "reference/chat_encoder.hpp"
#include "reference/error.hpp"
#include "reference/tokenizer.hpp"

using namespace akv;

namespace {

const char* kToolsConv = R"({"messages": [
 {"role": "system", "content": "Be brief."},
 {"role": "user", "content": "Weather in Z\u00fcrich?"},
 {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Z\u00fcrich\", \"days\": 2}"}}]},
 {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
 {"role": "assistant", "content": "Sunny."}],
 "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather now", "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}}, "required": ["city"]}}},
           {"type": "function", "function": {"name": "noop", "parameters": {"type": "object", "properties": {}}}}]})";

std::string whole(const chat::TurnRendering& r) {
  std::string s;
  for (const auto& p : r.preamble) s += p.text;
  for (const auto& m : r.messages)
    for (const auto& p : m) s += p.text;
  return s;
}

Conversation without_system(const Conversation& c) {
  Conversation d = c;
  d.messages.erase(d.messages.begin());
  return d;
}

TEST(IN10_Tools, ToolsAreReadInTheirOrderAndTheirKeysOrder) {
  const Conversation c = parse_conversation(kToolsConv);
  ASSERT_EQ(c.tools.size(), 2u);
  EXPECT_EQ(c.tools[0].name, "get_weather");
  EXPECT_EQ(c.tools[0].json.rfind(R"({"type":"function","function":{"name":"get_weather","description")", 0), 0u) << c.tools[0].json;
  EXPECT_EQ(c.tools[1].parameters, R"({"type":"object","properties":{}})");
  // Legacy functions are function tools; bad tools are refused naming the field.
  const Conversation f = parse_conversation(R"({"messages": [{"role": "user", "content": "x"}], "functions": [{"name": "f", "parameters": {"type": "object"}}]})");
  ASSERT_EQ(f.tools.size(), 1u);
  EXPECT_EQ(f.tools[0].json, R"({"type":"function","function":{"name":"f","parameters":{"type":"object"}}})");
  for (const auto& [bad, needle] : std::vector<std::pair<std::string, std::string>>{
           {R"("tools": [{"type": "custom", "custom": {"name": "x"}}])", "tools[0].type"},
           {R"("tools": [{"type": "function", "function": {"name": "a b"}}])", "tools[0].function.name"},
           {R"("tools": [{"type": "function", "function": {"name": "a"}}, {"type": "function", "function": {"name": "a"}}])", "named twice"},
           {R"("tools": [{"type": "function", "function": {"name": "a", "parameters": []}}])", "parameters"},
           {R"("tools": [{"type": "function", "function": {"name": "a", "extra": 1}}])", "extra"},
           {R"("tools": [], "functions": [])", "not both"},
           {R"("reasoning_effort": "high")", "reasoning_effort"},
           {R"("modalities": ["audio"])", "modalities"}}) {
    try {
      parse_conversation(R"({"messages": [{"role": "user", "content": "x"}], )" + bad + "}");
      ADD_FAILURE() << bad << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  }
  // Decoding options act after the logits: listed as ignored in a conversation file.
  const Conversation o = parse_conversation(R"({"messages": [{"role": "user", "content": "x"}], "tool_choice": "auto", "parallel_tool_calls": false, "reasoning_effort": null})");
  EXPECT_EQ(o.ignored.size(), 3u);
}

// Qwen2.5's tool block for kToolsConv's tools (jinja2's rendering), and the turns after the system turn.
const char* const kQwenTools = R"akv(

# Tools

You may call one or more functions to assist with the user query.

You are provided with function signatures within <tools></tools> XML tags:
<tools>
{"type": "function", "function": {"name": "get_weather", "description": "Weather now", "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}}, "required": ["city"]}}}
{"type": "function", "function": {"name": "noop", "parameters": {"type": "object", "properties": {}}}}
</tools>

For each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:
<tool_call>
{"name": <function-name>, "arguments": <args-json-object>}
</tool_call><|im_end|>
)akv";
const char* const kQwenTurns = R"akv(<|im_start|>user
Weather in Zürich?<|im_end|>
<|im_start|>assistant
<tool_call>
{"name": "get_weather", "arguments": {"city": "Zürich", "days": 2}}
</tool_call><|im_end|>
<|im_start|>user
<tool_response>
sunny
</tool_response><|im_end|>
<|im_start|>assistant
Sunny.<|im_end|>
)akv";

TEST(CT14_Tools, Qwen25RendersThemInItsSystemTurnAsItsTemplateDoes) {
  const Conversation c = parse_conversation(kToolsConv);
  EXPECT_EQ(whole(chat::render_turns(chat::TurnTemplate::kQwen25, c)), std::string("<|im_start|>system\nBe brief.") + kQwenTools + kQwenTurns);
  EXPECT_EQ(whole(chat::render_turns(chat::TurnTemplate::kQwen25, without_system(c))),
            std::string("<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.") + kQwenTools + kQwenTurns);
  // The tools change the system turn only: message 0's span with a system message, else the preamble's.
  const chat::TurnRendering r = chat::render_turns(chat::TurnTemplate::kQwen25, without_system(c));
  std::string pre;
  for (const auto& p : r.preamble) pre += p.text;
  EXPECT_NE(pre.find("# Tools"), std::string::npos);
}

TEST(CT14_Tools, Llama3RendersThemInTheFirstUserMessageAsItsTemplateDoes) {
  const Conversation c = parse_conversation(kToolsConv);
    // The two renderings differ only in the system turn's text (none without a system message).
  const std::string kHead = R"akv(<|begin_of_text|><|start_header_id|>system<|end_header_id|>

Environment: ipython
Cutting Knowledge Date: December 2023
Today Date: 26 Jul 2024

)akv";
  const std::string kRest = R"akv(<|start_header_id|>user<|end_header_id|>

Given the following functions, please respond with a JSON for a function call with its proper arguments that best answers the given prompt.

Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}.Do not use variables.

{
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather now",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {
                    "type": "string"
                },
                "days": {
                    "type": "integer",
                    "minimum": 1
                }
            },
            "required": [
                "city"
            ]
        }
    }
}

{
    "type": "function",
    "function": {
        "name": "noop",
        "parameters": {
            "type": "object",
            "properties": {}
        }
    }
}

Weather in Zürich?<|eot_id|><|start_header_id|>assistant<|end_header_id|>

{"name": "get_weather", "parameters": {"city": "Zürich", "days": 2}}<|eot_id|><|start_header_id|>ipython<|end_header_id|>

"sunny"<|eot_id|><|start_header_id|>assistant<|end_header_id|>

Sunny.<|eot_id|>)akv";
  EXPECT_EQ(whole(chat::render_turns(chat::TurnTemplate::kLlama3, c)), kHead + "Be brief.<|eot_id|>" + kRest);
  EXPECT_EQ(whole(chat::render_turns(chat::TurnTemplate::kLlama3, without_system(c))), kHead + "<|eot_id|>" + kRest);
  // No user message after the system one: the template raises; akv refuses, naming why.
  Conversation only = c;
  only.messages.resize(1);
  EXPECT_THROW(chat::render_turns(chat::TurnTemplate::kLlama3, only), Error);
  Conversation assistant_first = without_system(c);
  assistant_first.messages.erase(assistant_first.messages.begin());
  EXPECT_THROW(chat::render_turns(chat::TurnTemplate::kLlama3, assistant_first), Error);
}

TEST(CT14_Tools, Phi3RefusesThemByName) {
  try {
    chat::render_turns(chat::TurnTemplate::kPhi3, parse_conversation(kToolsConv));
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tools"), std::string::npos);
  }
}

TEST(CT14_Tools, TheFixtureWritesThemAsAPreambleSpan) {
  const Conversation c = parse_conversation(kToolsConv);
  const auto enc = make_fixture_encoder(288);
  const EncodedConversation e = enc->encode(c);
  ASSERT_FALSE(e.preamble.empty());
  EXPECT_EQ(e.preamble.front(), tok::kTools);
  EXPECT_EQ(e.preamble.back(), tok::kEnd);
  EXPECT_EQ(tok::render(e.preamble), "<|tools|>" + c.tools[0].json + "\n" + c.tools[1].json + "<|end|>");
  Conversation other = c;
  other.tools.pop_back();
  EXPECT_NE(enc->encode(other).preamble, e.preamble);  // a change of the tool list changes the span
  EXPECT_EQ(enc->encode(other).spans, e.spans);        // and nothing else
}

TEST(CT14_Tools, PythonJsonDumpsWithAnIndentIsPythons) {
  EXPECT_EQ(chat::python_json_dumps(R"({"a": [1, {"b": []}], "c": {}, "d": "\u00e9"})", 4),
            "{\n    \"a\": [\n        1,\n        {\n            \"b\": []\n        }\n    ],\n    \"c\": {},\n    \"d\": \"\u00e9\"\n}");
}

std::vector<ToolDef> tools_of(const char* conv) { return parse_conversation(conv).tools; }

TEST(CT15_ToolCalls, HermesCallsAreReadAndWhatIsNoCallStaysText) {
  const auto tools = tools_of(kToolsConv);
  using chat::parse_reply;
  auto r = parse_reply(ToolSyntax::kHermes, "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Bern\"}}\n</tool_call>", tools, true);
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(r.calls[0].name, "get_weather");
  EXPECT_EQ(r.calls[0].arguments, R"({"city":"Bern"})");
  EXPECT_EQ(r.content, "Let me check.\n");
  EXPECT_TRUE(r.has_content);
  EXPECT_TRUE(r.errors.empty());
  // Only calls: null content. Arguments as a JSON string are read as the object they hold.
  r = parse_reply(ToolSyntax::kHermes, "<tool_call>{\"name\": \"noop\", \"arguments\": \"{}\"}</tool_call>\n<tool_call>{\"name\": \"noop\", \"arguments\": {}}</tool_call>", tools, true);
  EXPECT_EQ(r.calls.size(), 2u);
  EXPECT_FALSE(r.has_content);
  // parallel_tool_calls false: the second stays text and is said.
  r = parse_reply(ToolSyntax::kHermes, "<tool_call>{\"name\": \"noop\", \"arguments\": {}}</tool_call><tool_call>{\"name\": \"noop\", \"arguments\": {}}</tool_call>", tools, false);
  EXPECT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(r.errors.size(), 1u);
  EXPECT_NE(r.content.find("<tool_call>"), std::string::npos);
  // An unknown function, arguments that are no object, a call cut short: no call, the text kept.
  for (const char* bad : {"<tool_call>{\"name\": \"rm\", \"arguments\": {}}</tool_call>", "<tool_call>{\"name\": \"noop\", \"arguments\": [1]}</tool_call>",
                          "<tool_call>{\"name\": \"noop\", \"argu"}) {
    r = parse_reply(ToolSyntax::kHermes, bad, tools, true);
    EXPECT_TRUE(r.calls.empty()) << bad;
    EXPECT_EQ(r.content, bad);
    EXPECT_EQ(r.errors.size(), 1u) << bad;
  }
  EXPECT_TRUE(parse_reply(ToolSyntax::kHermes, "<tool_call>{\"name\": \"noop\", \"argu", tools, true).open_call);
  // No tools offered: a call-shaped text is text.
  EXPECT_TRUE(parse_reply(ToolSyntax::kHermes, "<tool_call>{\"name\": \"noop\", \"arguments\": {}}</tool_call>", {}, true).calls.empty());
}

TEST(CT15_ToolCalls, Llama3sWholeReplyIsACallOrText) {
  const auto tools = tools_of(kToolsConv);
  auto r = chat::parse_reply(ToolSyntax::kLlamaJson, "<|python_tag|>{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Oslo\"}}", tools, true);
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(r.calls[0].arguments, R"({"city":"Oslo"})");
  EXPECT_FALSE(r.has_content);
  r = chat::parse_reply(ToolSyntax::kLlamaJson, "{\"answer\": 1}", tools, true);
  EXPECT_TRUE(r.calls.empty());
  EXPECT_EQ(r.content, "{\"answer\": 1}");
  EXPECT_EQ(r.errors.size(), 1u);
  r = chat::parse_reply(ToolSyntax::kLlamaJson, "It is sunny.", tools, true);
  EXPECT_TRUE(r.calls.empty() && r.errors.empty());
}

}  // namespace
