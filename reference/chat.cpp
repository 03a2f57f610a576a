#include "reference/chat.hpp"

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "reference/error.hpp"
#include "reference/tokenizer.hpp"

namespace akv {

namespace {
using nlohmann::json;

[[noreturn]] void bad(const std::string& where, const std::string& what) {
  throw Error(ErrorCode::kBadInput, where + ": " + what);
}

std::string optional_string(const json& m, const char* key, const std::string& where) {
  if (!m.contains(key) || m[key].is_null()) return {};
  if (!m[key].is_string()) bad(where + "." + key, "expected a string");
  return m[key].get<std::string>();
}

// content: a string, null, or an array of {"type": "text", "text": ...} parts.
std::string content_text(const json& m, const std::string& where) {
  if (!m.contains("content") || m["content"].is_null()) return {};
  const json& c = m["content"];
  if (c.is_string()) return c.get<std::string>();
  if (!c.is_array()) bad(where + ".content", "expected a string, null or an array of text parts");
  std::string s;
  for (size_t i = 0; i < c.size(); ++i) {
    const std::string w = where + ".content[" + std::to_string(i) + "]";
    if (!c[i].is_object() || c[i].value("type", "") != "text" || !c[i].contains("text") || !c[i]["text"].is_string())
      bad(w, "expected {\"type\": \"text\", \"text\": string}");
    s += c[i]["text"].get<std::string>();
  }
  return s;
}

// "tokens": a non-empty array of ids in [0, 2^31); exclusive with the text fields.
std::vector<Token> raw_tokens(const json& m, const Message& msg, const std::string& where) {
  const json& t = m["tokens"];
  if (!t.is_array()) bad(where + ".tokens", "expected an array of token ids");
  if (t.empty()) bad(where + ".tokens", "empty: a span holds at least one token (leave the message out instead)");
  if (!msg.content.empty() || !msg.name.empty() || !msg.tool_call_id.empty() || !msg.tool_calls.empty())
    bad(where + ".tokens", "a message with raw tokens carries no content, name, tool_call_id or tool_calls");
  std::vector<Token> out;
  for (size_t i = 0; i < t.size(); ++i) {
    if (!t[i].is_number_integer() || t[i].get<long long>() < 0 || t[i].get<long long>() > 0x7fffffffLL)
      bad(where + ".tokens[" + std::to_string(i) + "]", "expected a token id, an integer in [0, 2^31)");
    out.push_back(static_cast<Token>(t[i].get<long long>()));
  }
  return out;
}

Message parse_message(const json& m, const std::string& where) {
  if (!m.is_object()) bad(where, "expected an object");
  if (!m.contains("role") || !m["role"].is_string()) bad(where + ".role", "missing or not a string");
  Message msg;
  msg.role = m["role"].get<std::string>();
  if (msg.role != "system" && msg.role != "user" && msg.role != "assistant" && msg.role != "tool")
    bad(where + ".role", "unknown role '" + msg.role + "' (expected system, user, assistant or tool)");
  msg.content = content_text(m, where);
  msg.name = optional_string(m, "name", where);
  msg.tool_call_id = optional_string(m, "tool_call_id", where);
  if (m.contains("tool_calls") && !m["tool_calls"].is_null()) {
    if (msg.role != "assistant") bad(where + ".tool_calls", "only assistant messages carry tool_calls");
    const json& tc = m["tool_calls"];
    if (!tc.is_array()) bad(where + ".tool_calls", "expected an array");
    for (size_t i = 0; i < tc.size(); ++i) {
      const std::string w = where + ".tool_calls[" + std::to_string(i) + "]";
      if (!tc[i].is_object() || !tc[i].contains("function") || !tc[i]["function"].is_object())
        bad(w, "expected an object with a \"function\" object");
      const json& f = tc[i]["function"];
      ToolCall call;
      call.id = optional_string(tc[i], "id", w);
      call.name = optional_string(f, "name", w + ".function");
      if (f.contains("arguments") && !f["arguments"].is_null())
        call.arguments = f["arguments"].is_string() ? f["arguments"].get<std::string>() : f["arguments"].dump();
      msg.tool_calls.push_back(std::move(call));
    }
  }
  if (m.contains("tokens") && !m["tokens"].is_null()) msg.tokens = raw_tokens(m, msg, where);
  return msg;
}
}  // namespace

Conversation parse_conversation(std::string_view text) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    throw Error(ErrorCode::kBadInput, std::string("malformed JSON: ") + e.what());
  }
  if (!j.is_object()) bad("conversation", "expected a JSON object with a \"messages\" array");
  if (!j.contains("messages") || !j["messages"].is_array()) bad("conversation", "missing \"messages\" array");
  Conversation c;
  const json& ms = j["messages"];
  if (ms.empty()) throw Error(ErrorCode::kBadInput, "conversation: empty \"messages\" array");
  for (size_t i = 0; i < ms.size(); ++i) c.messages.push_back(parse_message(ms[i], "messages[" + std::to_string(i) + "]"));
  if (j.contains("poisoned") && !j["poisoned"].is_null()) {
    const json& p = j["poisoned"];
    if (!p.is_array()) bad("poisoned", "expected an array of message indexes");
    std::set<size_t> seen;
    for (size_t i = 0; i < p.size(); ++i) {
      const std::string w = "poisoned[" + std::to_string(i) + "]";
      if (!p[i].is_number_integer() || p[i].get<long long>() < 0) bad(w, "expected a message index >= 0");
      const auto idx = p[i].get<unsigned long long>();
      if (idx >= c.messages.size())
        bad(w, "message index " + std::to_string(idx) + " out of range (" + std::to_string(c.messages.size()) + " messages)");
      if (!seen.insert(idx).second) bad(w, "message index " + std::to_string(idx) + " repeated");
      c.poisoned.push_back(idx);
    }
  }
  return c;
}

Conversation load_conversation(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(ErrorCode::kBadInput, "cannot read conversation file '" + path + "'");
  std::stringstream ss;
  ss << f.rdbuf();
  try {
    return parse_conversation(ss.str());
  } catch (const Error& e) {
    throw Error(e.code(), path + ": " + e.what());
  }
}

std::vector<Token> encode_message(const Message& m) {
  if (m.tokens) return *m.tokens;
  std::vector<Token> t;
  if (m.role == "system") t.push_back(tok::kSystem);
  else if (m.role == "user") t.push_back(tok::kUser);
  else if (m.role == "assistant") t.push_back(tok::kAssistant);
  else if (m.role == "tool") t.push_back(tok::kTool);
  else throw Error(ErrorCode::kBadInput, "unknown role '" + m.role + "'");
  if (m.role == "tool") {
    tok::append_bytes(t, m.name);
    if (!m.tool_call_id.empty()) {
      t.push_back(tok::kId);
      tok::append_bytes(t, m.tool_call_id);
    }
    t.push_back(tok::kResult);
  }
  tok::append_bytes(t, m.content);
  for (const ToolCall& c : m.tool_calls) {
    t.push_back(tok::kCall);
    tok::append_bytes(t, c.name);
    t.push_back(tok::kArgs);
    tok::append_bytes(t, c.arguments);
    if (!c.id.empty()) {
      t.push_back(tok::kId);
      tok::append_bytes(t, c.id);
    }
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
    if (!m.tool_calls.empty()) {
      json tc = json::array();
      for (const ToolCall& call : m.tool_calls)
        tc.push_back({{"id", call.id}, {"type", "function"}, {"function", {{"name", call.name}, {"arguments", call.arguments}}}});
      o["tool_calls"] = tc;
    }
    ms.push_back(o);
  }
  return json{{"messages", ms}, {"poisoned", c.poisoned}}.dump(1);
}

}  // namespace akv
