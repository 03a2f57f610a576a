#include "serve/responses_api.hpp"

#include "readers/json_limited.hpp"
#include "readers/conversation/chat_parse.hpp"
#include "reference/error.hpp"
#include "serve/openai_json.hpp"

namespace akv::serve {
namespace {
using Ordered = nlohmann::ordered_json;

[[noreturn]] void bad(const std::string& field, const std::string& why) { throw Error(ErrorCode::kBadInput, field + ": " + why); }

// A message's content: a string, or parts of the types Responses gives text in.
Ordered content_of(const Ordered& c, const std::string& where) {
  if (c.is_string()) return c;
  if (!c.is_array()) bad(where, "expected a string or an array of parts");
  std::string text;
  for (size_t i = 0; i < c.size(); ++i) {
    const Ordered& p = c[i];
    const std::string w = where + "[" + std::to_string(i) + "]";
    if (!p.is_object() || !p.contains("type") || !p["type"].is_string()) bad(w, "expected a part with a type");
    const std::string t = p["type"].get<std::string>();
    if (t != "input_text" && t != "output_text" && t != "text")
      bad(w + ".type", "'" + t + "': akv reads text parts only (input_text, output_text); an image, file or audio part has no token form");
    for (const auto& [k, v] : p.items())
      if (k != "type" && k != "text" && k != "annotations" && k != "logprobs") bad(w + "." + k, "unknown field of a text part");
    if (!p.contains("text") || !p["text"].is_string()) bad(w + ".text", "expected a string");
    text += p["text"].get<std::string>();
  }
  return text;
}
}  // namespace

std::string chat_body_of_response(std::string_view body) {
  // The strict reader first (size, depth, repeated keys: spec/input.md IN3), then in order.
  (void)readers::parse_json_limited(body, kConversationJson, {ErrorCode::kBadInput, "body"});
  const Ordered j = Ordered::parse(body);
  if (!j.is_object()) bad("body", "expected a JSON object");
  Ordered chat = Ordered::object();
  Ordered msgs = Ordered::array();
  for (const auto& [k, v] : j.items()) {
    if (k == "input" || k == "instructions" || k == "tools" || k == "text" || k == "max_output_tokens") continue;
    if (k == "model" || k == "tool_choice" || k == "parallel_tool_calls" || k == "temperature" || k == "top_p" || k == "stream" ||
        k == "prompt_cache_key" || k == "service_tier" || k == "safety_identifier" || k == "user" || k == "metadata" || k == "store") {
      if (k == "tool_choice" && v.is_object() && v.contains("name") && !v.contains("function"))
        chat[k] = {{"type", "function"}, {"function", {{"name", v["name"]}}}};  // Responses names the function flat
      else
        chat[k] = v;
      continue;
    }
    if (k == "truncation") {
      if (!(v.is_null() || v == "disabled")) bad(k, "akv never truncates a context: \"disabled\" or null");
      continue;
    }
    if (k == "reasoning") {
      if (!v.is_null()) bad(k, "akv's templates render no reasoning prompt: send null, or leave it out");
      continue;
    }
    if (k == "include") {
      if (!(v.is_null() || (v.is_array() && v.empty()))) bad(k, "akv returns no extra output items");
      continue;
    }
    if (k == "previous_response_id") bad(k, "akv keeps no responses: send the whole conversation in input (spec/serving.md SV17)");
    bad(k, "unknown field of a Responses request (spec/serving.md SV17)");
  }
  if (j.contains("instructions") && !j["instructions"].is_null()) {
    if (!j["instructions"].is_string()) bad("instructions", "expected a string");
    msgs.push_back({{"role", "system"}, {"content", j["instructions"]}});
  }
  if (!j.contains("input") || j["input"].is_null()) bad("input", "missing");
  const Ordered& in = j["input"];
  if (in.is_string()) {
    msgs.push_back({{"role", "user"}, {"content", in}});
  } else if (in.is_array()) {
    for (size_t i = 0; i < in.size(); ++i) {
      const Ordered& it = in[i];
      const std::string w = "input[" + std::to_string(i) + "]";
      if (!it.is_object()) bad(w, "expected an item object");
      const std::string type = it.contains("type") && it["type"].is_string() ? it["type"].get<std::string>() : "message";
      if (type == "message") {
        for (const auto& [k, v] : it.items())
          if (k != "type" && k != "role" && k != "content" && k != "id" && k != "status") bad(w + "." + k, "unknown field of a message item");
        if (!it.contains("role") || !it["role"].is_string()) bad(w + ".role", "expected a string");
        msgs.push_back({{"role", it["role"]}, {"content", content_of(it.contains("content") ? it["content"] : Ordered(""), w + ".content")}});
      } else if (type == "function_call") {
        for (const auto& [k, v] : it.items())
          if (k != "type" && k != "call_id" && k != "name" && k != "arguments" && k != "id" && k != "status") bad(w + "." + k, "unknown field of a function_call item");
        if (!it.contains("call_id") || !it["call_id"].is_string() || !it.contains("name") || !it["name"].is_string() ||
            !it.contains("arguments") || !it["arguments"].is_string())
          bad(w, "a function_call item needs call_id, name and arguments strings");
        const Ordered call = {{"id", it["call_id"]}, {"type", "function"}, {"function", {{"name", it["name"]}, {"arguments", it["arguments"]}}}};
        // Consecutive calls are one assistant message's parallel calls.
        if (!msgs.empty() && msgs.back()["role"] == "assistant" && msgs.back().contains("tool_calls") && msgs.back()["content"] == "")
          msgs.back()["tool_calls"].push_back(call);
        else
          msgs.push_back({{"role", "assistant"}, {"content", ""}, {"tool_calls", Ordered::array({call})}});
      } else if (type == "function_call_output") {
        for (const auto& [k, v] : it.items())
          if (k != "type" && k != "call_id" && k != "output" && k != "id" && k != "status") bad(w + "." + k, "unknown field of a function_call_output item");
        if (!it.contains("call_id") || !it["call_id"].is_string()) bad(w + ".call_id", "expected a string");
        if (!it.contains("output")) bad(w + ".output", "missing");
        msgs.push_back({{"role", "tool"}, {"tool_call_id", it["call_id"]}, {"content", content_of(it["output"], w + ".output")}});
      } else {
        bad(w + ".type", "'" + type + "': akv reads message, function_call and function_call_output items");
      }
    }
  } else {
    bad("input", "expected a string or an array of items");
  }
  chat["messages"] = msgs;
  if (j.contains("tools") && !j["tools"].is_null()) {
    if (!j["tools"].is_array()) bad("tools", "expected an array");
    Ordered tools = Ordered::array();
    for (size_t i = 0; i < j["tools"].size(); ++i) {
      const Ordered& t = j["tools"][i];
      const std::string w = "tools[" + std::to_string(i) + "]";
      if (!t.is_object() || !t.contains("type") || t["type"] != "function")
        bad(w + ".type", "only function tools are rendered (spec/input.md IN10)");
      Ordered f = Ordered::object();
      for (const auto& [k, v] : t.items())
        if (k != "type") f[k] = v;  // name, description, parameters, strict: checked as chat tools are
      tools.push_back({{"type", "function"}, {"function", f}});
    }
    chat["tools"] = tools;
  }
  if (j.contains("max_output_tokens") && !j["max_output_tokens"].is_null()) chat["max_completion_tokens"] = j["max_output_tokens"];
  if (j.contains("text") && !j["text"].is_null()) {
    const Ordered& t = j["text"];
    if (!t.is_object()) bad("text", "expected an object");
    for (const auto& [k, v] : t.items())
      if (k != "format" && k != "verbosity") bad("text." + k, "unknown field");
    if (t.contains("verbosity") && !t["verbosity"].is_null()) bad("text.verbosity", "akv's templates render no verbosity: send null");
    if (t.contains("format") && !t["format"].is_null()) {
      const Ordered& f = t["format"];
      if (!f.is_object() || !f.contains("type")) bad("text.format", "expected {\"type\": ...}");
      if (f["type"] == "json_schema") {
        Ordered s = Ordered::object();
        for (const auto& [k, v] : f.items())
          if (k != "type") s[k] = v;
        chat["response_format"] = {{"type", "json_schema"}, {"json_schema", s}};
      } else {
        chat["response_format"] = f;
      }
    }
  }
  return chat.dump(-1, ' ', false, Ordered::error_handler_t::replace);
}

nlohmann::json response_json(const std::string& id, int64_t created, const std::string& model, const Reply& r,
                             const nlohmann::json& request) {
  using json = nlohmann::json;
  json output = json::array();
  if (r.has_content && (!r.content.empty() || r.calls.empty()))
    output.push_back({{"type", "message"},
                      {"id", "msg_" + id.substr(5)},
                      {"status", r.finish_reason == "length" ? "incomplete" : "completed"},
                      {"role", "assistant"},
                      {"content", {{{"type", "output_text"}, {"text", r.content}, {"annotations", json::array()}}}}});
  for (const ReplyCall& c : r.calls)
    output.push_back({{"type", "function_call"}, {"id", "fc_" + c.id.substr(5)}, {"call_id", c.id}, {"name", c.name},
                      {"arguments", c.arguments}, {"status", "completed"}});
  const bool incomplete = r.finish_reason == "length";
  return {{"id", id},
          {"object", "response"},
          {"created_at", created},
          {"status", incomplete ? "incomplete" : "completed"},
          {"incomplete_details", incomplete ? json{{"reason", "max_output_tokens"}} : json(nullptr)},
          {"error", nullptr},
          {"model", model},
          {"output", output},
          {"parallel_tool_calls", request.value("parallel_tool_calls", true)},
          {"tool_choice", request.contains("tool_choice") ? request["tool_choice"] : json("auto")},
          {"tools", request.contains("tools") ? request["tools"] : json::array()},
          {"temperature", request.contains("temperature") ? request["temperature"] : json(1.0)},
          {"top_p", request.contains("top_p") ? request["top_p"] : json(1.0)},
          {"max_output_tokens", request.contains("max_output_tokens") ? request["max_output_tokens"] : json(nullptr)},
          {"instructions", request.contains("instructions") ? request["instructions"] : json(nullptr)},
          {"text", request.contains("text") ? request["text"] : json{{"format", {{"type", "text"}}}}},
          {"truncation", "disabled"},
          {"metadata", request.contains("metadata") && request["metadata"].is_object() ? request["metadata"] : json::object()},
          {"usage", {{"input_tokens", r.stats.prompt_tokens},
                     {"input_tokens_details", {{"cached_tokens", r.stats.reused_tokens}}},
                     {"output_tokens", r.tokens.size()},
                     {"output_tokens_details", {{"reasoning_tokens", 0}}},
                     {"total_tokens", r.stats.prompt_tokens + r.tokens.size()}}},
          {"akv", akv_json(r.stats, r.call_errors)}};
}

}  // namespace akv::serve
