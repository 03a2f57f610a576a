// Conversation files -> Conversation (spec/model.md M5, spec/input.md IN1-IN3): every field
// is serialised, rejected, or ignored and listed; nothing is dropped silently.
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "readers/conversation/chat_parse.hpp"
#include "reference/error.hpp"
#include "reference/strict.hpp"

namespace akv {

namespace {
using nlohmann::json;

[[noreturn]] void bad(const std::string& where, const std::string& what) {
  throw Error(ErrorCode::kBadInput, where + ": " + what);
}

// Keys that never reach a model, on a message, a content part or a tool call (IN2).
const std::set<std::string>& never_reach_model() {
  static const std::set<std::string> keys = {"id", "timestamp", "created", "created_at", "updated_at", "metadata", "index"};
  return keys;
}

// Keys that reach the model but have no serialisation in akv's spans: rejected (IN2).
const char* no_token_form(const std::string& key) {
  if (key == "audio") return "an audio reference reaches the model but akv serialises no audio (spec/input.md IN2)";
  return nullptr;
}

// Top-level keys of a request or log that never reach the model's prompt or logits: where the
// file came from, and the sampling and transport options of the API call (IN2).
const std::set<std::string>& top_level_ignored() {
  static const std::set<std::string> keys = {
      "source", "tags", "note", "notes", "description", "metadata", "id", "created", "created_at", "timestamp",
      "model", "user", "temperature", "top_p", "top_k", "seed", "n", "stream", "stream_options", "stop", "max_tokens",
      "max_completion_tokens", "presence_penalty", "frequency_penalty", "logit_bias", "logprobs", "top_logprobs", "store",
      "prompt_cache_key",      // a cache key: akv serve scopes its cache by it (spec/serving.md SV10)
      "service_tier", "safety_identifier",  // billing and abuse tracking of OpenAI's platform: transport
      // Decoding constraints: they mask tokens after the logits, never the prompt (spec/input.md
      // IN10); akv serve honours them (spec/serving.md SV14-SV16), a witness file lists them.
      "tool_choice", "parallel_tool_calls", "response_format", "function_call",
      "akv_counterexample"};  // a property's counterexample file: how it was found (spec/properties.md)
  return keys;
}

// Why a top-level key that reaches the model is rejected (IN2), or nullptr for an unknown key.
const char* top_level_reaches_model(const std::string& key) {
  if (key == "system")
    return "a top-level system prompt (Anthropic's request shape) reaches the model; write it as messages[0] with "
           "role \"system\" (spec/input.md IN2)";
  if (key == "instructions")
    return "a Responses API field: in a chat request the instructions are messages[0] with role \"system\" "
           "(POST /v1/responses takes it; spec/input.md IN2)";
  if (key == "reasoning_effort" || key == "verbosity")
    return "this option changes what a reasoning model is told, and akv's templates render no such prompt: send null, "
           "or leave it out (spec/input.md IN10)";
  if (key == "input")
    return "an OpenAI Responses API body: akv reads chat \"messages\"; convert its input items to messages "
           "(docs/auditors-guide.md, Other formats; spec/input.md IN2)";
  return nullptr;
}

// Walks the keys of `o`: `serialised` ones are the caller's, never-reach-model ones are
// recorded in `ignored`, anything else is rejected naming it.
void check_keys(const json& o, const std::string& where, const std::set<std::string>& serialised,
                std::vector<std::string>& ignored) {
  for (const auto& [key, value] : o.items()) {
    if (serialised.count(key)) continue;
    const std::string w = where + "." + printable(key, 40);
    // OpenAI's client writes a reply message back with `audio` and `annotations` set to null:
    // null carries nothing, so these are absent (ignored and listed), never a value (IN2).
    if (value.is_null() && (key == "audio" || key == "annotations")) {
      ignored.push_back(w);
      continue;
    }
    if (const char* why = no_token_form(key)) bad(w, why);
    if (never_reach_model().count(key)) {
      ignored.push_back(w);
      continue;
    }
    bad(w, "unknown field: akv cannot tell whether it reaches the model, so it rejects it (spec/input.md IN2)");
  }
}

std::string type_of(const json& v) { return v.type_name(); }

std::string string_field(const json& o, const char* key, const std::string& where) {
  if (!o.contains(key) || o[key].is_null()) return {};
  if (!o[key].is_string()) bad(where + "." + key, "expected a string, got " + type_of(o[key]));
  return o[key].get<std::string>();
}

// content: a string, null, or an array of parts: {"type": "text", "text"} (concatenated),
// {"type": "refusal", "refusal"} (assistant; appended to `refusal`); other part types reach
// the model as images, audio or files and are rejected.
std::string content_text(const json& m, const std::string& where, const std::string& role, std::string& refusal,
                         std::vector<std::string>& ignored) {
  if (!m.contains("content") || m["content"].is_null()) return {};
  const json& c = m["content"];
  if (c.is_string()) return c.get<std::string>();
  if (!c.is_array()) bad(where + ".content", "expected a string, null or an array of parts, got " + type_of(c));
  std::string s;
  for (size_t i = 0; i < c.size(); ++i) {
    const std::string w = where + ".content[" + std::to_string(i) + "]";
    if (!c[i].is_object()) bad(w, "expected a part object {\"type\": \"text\", \"text\": string}, got " + type_of(c[i]));
    const std::string type = string_field(c[i], "type", w);
    if (type == "text") {
      check_keys(c[i], w, {"type", "text"}, ignored);
      if (!c[i].contains("text") || !c[i]["text"].is_string()) bad(w + ".text", "expected a string");
      s += c[i]["text"].get<std::string>();
    } else if (type == "refusal" && role == "assistant") {
      check_keys(c[i], w, {"type", "refusal"}, ignored);
      if (!c[i].contains("refusal") || !c[i]["refusal"].is_string()) bad(w + ".refusal", "expected a string");
      refusal += c[i]["refusal"].get<std::string>();
    } else if (type.empty()) {
      bad(w + ".type", "missing: a content part names its type");
    } else {
      bad(w + ".type", "'" + printable(type, 40) + "' parts" +
                           (type == "refusal" ? " belong to assistant messages"
                            : type == "tool_use" || type == "tool_result"
                                ? " are Anthropic content blocks: akv reads OpenAI chat messages; write a tool_use as an "
                                  "assistant's tool_calls and a tool_result as a tool message (spec/input.md IN2)"
                                : " reach the model, and akv serialises only text parts (and refusal parts of assistant "
                                  "messages): an image, audio or file has no token form in akv's spans (spec/input.md IN2)"));
    }
  }
  return s;
}

// A function call object {"name", "arguments"}: arguments as the JSON text the API carries
// (an object or array is written as compact JSON).
ToolCall function_call(const json& f, const std::string& where, std::vector<std::string>& ignored) {
  if (!f.is_object()) bad(where, "expected an object {\"name\", \"arguments\"}, got " + type_of(f));
  check_keys(f, where, {"name", "arguments"}, ignored);
  ToolCall call;
  call.name = string_field(f, "name", where);
  if (f.contains("arguments") && !f["arguments"].is_null())
    call.arguments = f["arguments"].is_string() ? f["arguments"].get<std::string>() : f["arguments"].dump();
  return call;
}

ToolCall tool_call(const json& tc, const std::string& w, std::vector<std::string>& ignored) {
  if (!tc.is_object()) bad(w, "expected a tool call object, got " + type_of(tc));
  const std::string type = tc.contains("type") && !tc["type"].is_null() ? string_field(tc, "type", w) : "function";
  ToolCall call;
  if (type == "function") {
    check_keys(tc, w, {"id", "type", "function"}, ignored);
    if (!tc.contains("function")) bad(w, "a function tool call carries a \"function\" object");
    call = function_call(tc["function"], w + ".function", ignored);
  } else if (type == "custom") {
    check_keys(tc, w, {"id", "type", "custom"}, ignored);
    if (!tc.contains("custom") || !tc["custom"].is_object()) bad(w, "a custom tool call carries a \"custom\" object");
    const json& c = tc["custom"];
    check_keys(c, w + ".custom", {"name", "input"}, ignored);
    call.kind = "custom";
    call.name = string_field(c, "name", w + ".custom");
    call.arguments = string_field(c, "input", w + ".custom");
  } else {
    bad(w + ".type", "unknown tool call type '" + printable(type, 40) + "' (expected function or custom)");
  }
  // The id is read here, not in check_keys' ignored list: it is serialised (<|id|>).
  call.id = string_field(tc, "id", w);
  return call;
}

const std::set<std::string>& roles() {
  static const std::set<std::string> r = {"system", "developer", "user", "assistant", "tool", "function"};
  return r;
}

// The keys each role serialises (IN1, IN2); "role" and "tokens" everywhere.
std::set<std::string> serialised_keys(const std::string& role) {
  std::set<std::string> k = {"role", "tokens", "content", "name"};
  if (role == "assistant") k.insert({"refusal", "tool_calls", "function_call"});
  if (role == "tool") k.insert("tool_call_id");
  return k;
}

// A key that belongs to another role: named with the role that carries it.
void reject_wrong_role(const json& m, const std::string& where, const std::string& role) {
  struct Rule {
    const char* key;
    const char* owner;
  };
  static const Rule rules[] = {{"tool_calls", "assistant"}, {"function_call", "assistant"}, {"refusal", "assistant"},
                               {"tool_call_id", "tool"}};
  for (const Rule& r : rules)
    if (m.contains(r.key) && !m[r.key].is_null() && role != r.owner)
      bad(where + "." + r.key, std::string("only ") + r.owner + " messages carry " + r.key);
}

// "tokens": a non-empty array of ids in [0, 2^31); exclusive with the text fields.
std::vector<Token> raw_tokens(const json& m, const Message& msg, const std::string& where) {
  const json& t = m["tokens"];
  if (!t.is_array()) bad(where + ".tokens", "expected an array of token ids, got " + type_of(t));
  if (t.empty()) bad(where + ".tokens", "empty: a span holds at least one token (leave the message out instead)");
  if (!msg.content.empty() || !msg.name.empty() || !msg.tool_call_id.empty() || !msg.refusal.empty() ||
      !msg.tool_calls.empty())
    bad(where + ".tokens", "a message with raw tokens carries no content, name, tool_call_id, refusal or tool calls");
  std::vector<Token> out;
  for (size_t i = 0; i < t.size(); ++i) {
    const std::string w = where + ".tokens[" + std::to_string(i) + "]";
    if (t[i].is_number_unsigned() && t[i].get<uint64_t>() <= 0x7fffffffULL) {
      out.push_back(static_cast<Token>(t[i].get<uint64_t>()));
      continue;
    }
    if (t[i].is_number_integer()) bad(w, "token id " + t[i].dump() + " outside [0, 2^31)");
    bad(w, "expected a token id, an integer in [0, 2^31), got " + type_of(t[i]));
  }
  return out;
}

Message parse_message(const json& m, const std::string& where, std::vector<std::string>& ignored) {
  if (!m.is_object()) bad(where, "expected a message object, got " + type_of(m));
  if (!m.contains("role")) bad(where + ".role", "missing");
  if (!m["role"].is_string()) bad(where + ".role", "expected a string, got " + type_of(m["role"]));
  Message msg;
  msg.role = m["role"].get<std::string>();
  if (!roles().count(msg.role))
    bad(where + ".role", "unknown role '" + printable(msg.role, 40) +
                             "' (expected system, developer, user, assistant, tool or function)");
  reject_wrong_role(m, where, msg.role);
  check_keys(m, where, serialised_keys(msg.role), ignored);
  msg.content = content_text(m, where, msg.role, msg.refusal, ignored);
  msg.name = string_field(m, "name", where);
  msg.tool_call_id = string_field(m, "tool_call_id", where);
  if (msg.role == "assistant") {
    msg.refusal = string_field(m, "refusal", where) + msg.refusal;
    if (m.contains("function_call") && !m["function_call"].is_null())
      msg.tool_calls.push_back(function_call(m["function_call"], where + ".function_call", ignored));
    if (m.contains("tool_calls") && !m["tool_calls"].is_null()) {
      const json& tc = m["tool_calls"];
      if (!tc.is_array()) bad(where + ".tool_calls", "expected an array, got " + type_of(tc));
      for (size_t i = 0; i < tc.size(); ++i)
        msg.tool_calls.push_back(tool_call(tc[i], where + ".tool_calls[" + std::to_string(i) + "]", ignored));
    }
  }
  if (m.contains("tokens") && !m["tokens"].is_null()) msg.tokens = raw_tokens(m, msg, where);
  return msg;
}

// A JSONL log (one request per line) reads as a first value and then more: say so.
void refuse_jsonl(std::string_view text) {
  const size_t nl = text.find('\n');
  const size_t next = nl == std::string_view::npos ? nl : text.find_first_not_of(" \t\r\n", nl);
  if (next != std::string_view::npos && text[next] == '{' && json::accept(text.substr(0, nl)))
    bad("conversation", "malformed JSON: a second value after the first line's: a JSONL log? akv reads one conversation per "
                        "file; split the log, one line a file (docs/auditors-guide.md, Other formats)");
}

std::vector<size_t> poisoned_list(const json& p, size_t messages) {
  if (!p.is_array()) bad("poisoned", "expected an array of message indexes, got " + type_of(p));
  std::vector<size_t> out;
  std::set<size_t> seen;
  for (size_t i = 0; i < p.size(); ++i) {
    const std::string w = "poisoned[" + std::to_string(i) + "]";
    if (p[i].is_number_integer() && !p[i].is_number_unsigned())
      bad(w, "message index " + p[i].dump() + " is negative");
    if (!p[i].is_number_unsigned())
      bad(w, "expected an integer message index, got " + type_of(p[i]) + " " + printable(p[i].dump(), 40));
    const auto idx = p[i].get<uint64_t>();
    if (idx >= messages)
      bad(w, "message index " + std::to_string(idx) + " out of range (" + std::to_string(messages) + " messages)");
    if (!seen.insert(idx).second) bad(w, "message index " + std::to_string(idx) + " repeated");
    out.push_back(idx);
  }
  return out;
}
// A JSON schema's nesting is bounded by IN3's depth; what is checked here is the tool's shape.
bool valid_tool_name(const std::string& n) {
  if (n.empty() || n.size() > 64) return false;
  for (const char ch : n)
    if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '-')) return false;
  return true;
}

// IN10: `tools` (function tools) or the legacy `functions`, in the request's order, each kept
// as compact JSON with its keys' order (read again as ordered JSON from the checked text).
std::vector<ToolDef> parse_tools(const json& j, std::string_view text) {
  const bool has_tools = j.contains("tools") && !j["tools"].is_null(), has_functions = j.contains("functions") && !j["functions"].is_null();
  if (!has_tools && !has_functions) return {};
  if (has_tools && has_functions) bad("functions", "give tools or the legacy functions, not both");
  const char* key = has_tools ? "tools" : "functions";
  if (!j[key].is_array()) bad(key, "expected an array, got " + type_of(j[key]));
  const nlohmann::ordered_json ordered = nlohmann::ordered_json::parse(text)[key];
  std::vector<ToolDef> out;
  std::set<std::string> names;
  for (size_t i = 0; i < j[key].size(); ++i) {
    const std::string w = std::string(key) + "[" + std::to_string(i) + "]";
    const json& t = j[key][i];
    if (!t.is_object()) bad(w, "expected an object, got " + type_of(t));
    json f;
    if (has_tools) {
      if (!t.contains("type") || t["type"] != "function")
        bad(w + ".type", "only function tools are rendered (\"type\": \"function\"); a custom or built-in tool has no "
                         "template form in akv (spec/input.md IN10)");
      for (const auto& [k, v] : t.items())
        if (k != "type" && k != "function") bad(w + "." + printable(k, 40), "unknown field of a tool (type, function)");
      if (!t.contains("function") || !t["function"].is_object()) bad(w + ".function", "expected an object");
      f = t["function"];
    } else {
      f = t;
    }
    const std::string fw = has_tools ? w + ".function" : w;
    for (const auto& [k, v] : f.items())
      if (k != "name" && k != "description" && k != "parameters" && k != "strict")
        bad(fw + "." + printable(k, 40), "unknown field of a function (name, description, parameters, strict)");
    if (!f.contains("name") || !f["name"].is_string() || !valid_tool_name(f["name"].get<std::string>()))
      bad(fw + ".name", "expected 1 to 64 of A-Z a-z 0-9 _ -");
    if (f.contains("description") && !f["description"].is_string()) bad(fw + ".description", "expected a string");
    if (f.contains("parameters") && !f["parameters"].is_object()) bad(fw + ".parameters", "expected a JSON schema object");
    if (f.contains("strict") && !f["strict"].is_boolean() && !f["strict"].is_null()) bad(fw + ".strict", "expected true or false");
    ToolDef d;
    d.name = f["name"].get<std::string>();
    if (!names.insert(d.name).second) bad(fw + ".name", "'" + d.name + "' is named twice");
    const nlohmann::ordered_json o = has_tools ? ordered[i] : nlohmann::ordered_json{{"type", "function"}, {"function", ordered[i]}};
    d.json = o.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
    if (f.contains("parameters")) d.parameters = o["function"]["parameters"].dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
    d.strict = f.contains("strict") && f["strict"].is_boolean() && f["strict"].get<bool>();
    out.push_back(std::move(d));
  }
  return out;
}
}  // namespace

Conversation parse_conversation(std::string_view text) {
  const json j = readers::parse_json_limited(text, kConversationJson, {ErrorCode::kBadInput, "conversation", refuse_jsonl});
  if (!j.is_object()) bad("conversation", "expected a JSON object with a \"messages\" array, got " + type_of(j));
  if (!j.contains("messages")) {
    if (j.contains("input")) bad("input", top_level_reaches_model("input"));  // a Responses API body, named as such
    bad("conversation", "missing \"messages\" array");
  }
  if (!j["messages"].is_array()) bad("messages", "expected an array, got " + type_of(j["messages"]));
  Conversation c;
  const json& ms = j["messages"];
  if (ms.empty()) bad("messages", "empty array: a conversation holds at least one message");
  // Top-level keys besides messages and poisoned: those that never reach the model (the file's
  // provenance, sampling options) are ignored and listed; those that do (a system prompt, tool
  // definitions) and unknown ones are rejected, naming them (IN2).
  for (const auto& [key, value] : j.items()) {
    if (key == "messages" || key == "poisoned" || key == "tools" || key == "functions") continue;
    if ((key == "reasoning_effort" || key == "verbosity") && value.is_null()) {
      c.ignored.push_back(key);
      continue;
    }
    if (key == "modalities") {  // ["text"] is what akv returns; anything else would be refused output
      if (!(value.is_null() || value == json::array({"text"})))
        bad("modalities", "akv replies with text only: [\"text\"] or null (spec/input.md IN10)");
      c.ignored.push_back(key);
      continue;
    }
    if (const char* why = top_level_reaches_model(key)) bad(printable(key, 40), why);
    if (!top_level_ignored().count(key))
      bad(printable(key, 40), "unknown top-level field: akv cannot tell whether it reaches the model, so it rejects it "
                              "(spec/input.md IN2)");
    c.ignored.push_back(printable(key, 40));
  }
  for (size_t i = 0; i < ms.size(); ++i)
    c.messages.push_back(parse_message(ms[i], "messages[" + std::to_string(i) + "]", c.ignored));
  c.tools = parse_tools(j, text);
  if (j.contains("poisoned") && !j["poisoned"].is_null()) c.poisoned = poisoned_list(j["poisoned"], c.messages.size());
  return c;
}

Conversation load_conversation(const std::string& path) {
  namespace fs = std::filesystem;
  const std::string shown = printable(path, 200);
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec || !fs::exists(st)) throw Error(ErrorCode::kBadInput, "cannot read conversation file '" + shown + "': no such file");
  if (fs::is_directory(st))
    throw Error(ErrorCode::kBadInput, "'" + shown + "' is a directory, not a conversation file");
  if (fs::is_regular_file(st) && fs::file_size(path, ec) > kMaxConversationBytes && !ec)
    throw Error(ErrorCode::kBadInput, "'" + shown + "' is larger than the limit of " +
                                          std::to_string(kMaxConversationBytes) + " bytes (spec/input.md IN3)");
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(ErrorCode::kBadInput, "cannot read conversation file '" + shown + "'");
  std::stringstream ss;
  ss << f.rdbuf();
  if (f.bad()) throw Error(ErrorCode::kBadInput, "cannot read conversation file '" + shown + "'");
  try {
    Conversation c = parse_conversation(ss.str());
    c.source = path;
    return c;
  } catch (const Error& e) {
    throw Error(e.code(), shown + ": " + e.what());
  }
}

}  // namespace akv
