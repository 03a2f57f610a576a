// Messages -> spans (spec/model.md M5, spec/input.md IN1) and back to JSON. Parsing lives in
// chat_parse.cpp.
#include "reference/chat.hpp"

#include <nlohmann/json.hpp>

#include "reference/error.hpp"
#include "reference/tokenizer.hpp"

namespace akv {

namespace {
using nlohmann::json;

Token opener(const std::string& role) {
  if (role == "system") return tok::kSystem;
  if (role == "developer") return tok::kDeveloper;
  if (role == "user") return tok::kUser;
  if (role == "assistant") return tok::kAssistant;
  if (role == "tool") return tok::kTool;
  if (role == "function") return tok::kFunction;
  throw Error(ErrorCode::kBadInput, "unknown role '" + role + "'");
}
}  // namespace

std::vector<Token> encode_message(const Message& m) {
  if (m.tokens) return *m.tokens;
  std::vector<Token> t{opener(m.role)};
  if (m.role == "tool" || m.role == "function") {
    tok::append_bytes(t, m.name);
    if (!m.tool_call_id.empty()) {
      t.push_back(tok::kId);
      tok::append_bytes(t, m.tool_call_id);
    }
    t.push_back(tok::kResult);
  } else if (!m.name.empty()) {
    t.push_back(tok::kName);
    tok::append_bytes(t, m.name);
  }
  tok::append_bytes(t, m.content);
  if (!m.refusal.empty()) {
    t.push_back(tok::kRefusal);
    tok::append_bytes(t, m.refusal);
  }
  for (const ToolCall& c : m.tool_calls) {
    t.push_back(tok::kCall);
    tok::append_bytes(t, c.name);
    t.push_back(c.kind == "custom" ? tok::kInput : tok::kArgs);
    tok::append_bytes(t, c.arguments);
    if (!c.id.empty()) {
      t.push_back(tok::kId);
      tok::append_bytes(t, c.id);
    }
  }
  t.push_back(tok::kEnd);
  return t;
}

void check_token_ids(const Conversation& c, int vocab) {
  for (size_t i = 0; i < c.messages.size(); ++i) {
    if (!c.messages[i].tokens) continue;
    const std::vector<Token>& t = *c.messages[i].tokens;
    for (size_t j = 0; j < t.size(); ++j)
      if (t[j] < 0 || t[j] >= vocab)
        throw Error(ErrorCode::kInvalidToken, (c.source.empty() ? "" : c.source + ": ") + "messages[" + std::to_string(i) +
                                                  "].tokens[" + std::to_string(j) + "]: token id " + std::to_string(t[j]) +
                                                  " outside the vocabulary [0, " + std::to_string(vocab) + ")");
  }
}

std::vector<Token> encode_tools(const std::vector<ToolDef>& tools) {
  if (tools.empty()) return {};
  std::vector<Token> t{tok::kTools};
  for (size_t i = 0; i < tools.size(); ++i) {
    if (i) tok::append_bytes(t, "\n");
    tok::append_bytes(t, tools[i].json);
  }
  t.push_back(tok::kEnd);
  return t;
}

std::string conversation_to_json(const Conversation& c) {
  json ms = json::array();
  for (const Message& m : c.messages) {
    if (m.tokens) {
      ms.push_back({{"role", m.role}, {"tokens", *m.tokens}});
      continue;
    }
    json o = {{"role", m.role}, {"content", m.content}};
    if (!m.name.empty()) o["name"] = m.name;
    if (!m.tool_call_id.empty()) o["tool_call_id"] = m.tool_call_id;
    if (!m.refusal.empty()) o["refusal"] = m.refusal;
    if (!m.tool_calls.empty()) {
      json tc = json::array();
      for (const ToolCall& call : m.tool_calls) {
        if (call.kind == "custom")
          tc.push_back({{"id", call.id}, {"type", "custom"}, {"custom", {{"name", call.name}, {"input", call.arguments}}}});
        else
          tc.push_back({{"id", call.id}, {"type", "function"}, {"function", {{"name", call.name}, {"arguments", call.arguments}}}});
      }
      o["tool_calls"] = tc;
    }
    ms.push_back(o);
  }
  if (c.tools.empty()) return json{{"messages", ms}, {"poisoned", c.poisoned}}.dump(1, ' ', false, json::error_handler_t::replace);
  // Tools keep their keys' order (templates print them as given, IN10).
  nlohmann::ordered_json out = nlohmann::ordered_json::parse(json{{"messages", ms}, {"poisoned", c.poisoned}}.dump(-1, ' ', false, json::error_handler_t::replace));
  nlohmann::ordered_json tools = nlohmann::ordered_json::array();
  for (const ToolDef& t : c.tools) tools.push_back(nlohmann::ordered_json::parse(t.json));
  out["tools"] = tools;
  return out.dump(1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace akv
