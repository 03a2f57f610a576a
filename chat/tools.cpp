#include "chat/tools.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>

#include "chat/turn_templates.hpp"

namespace akv::chat {
namespace {
using Ordered = nlohmann::ordered_json;

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

bool only_space(std::string_view s) { return std::all_of(s.begin(), s.end(), is_space); }

// One call's JSON as the syntax writes it: {"name": N, KEY: A} with A an object (a JSON text
// given as a string is read as one). "" on success, else why it is not a call.
std::string read_call(std::string_view body, const char* key, const std::vector<ToolDef>& tools, ParsedCall& out) {
  Ordered j;
  try {
    j = Ordered::parse(body);
  } catch (const std::exception&) {
    return "not a JSON object";
  }
  if (!j.is_object() || !j.contains("name") || !j["name"].is_string()) return "no \"name\" string";
  out.name = j["name"].get<std::string>();
  bool known = false;
  for (const ToolDef& t : tools) known = known || t.name == out.name;
  if (!known) return "a call to '" + out.name + "', which is not one of the request's tools";
  if (!j.contains(key)) return std::string("no \"") + key + "\"";
  Ordered a = j[key];
  if (a.is_string()) {
    try {
      a = Ordered::parse(a.get<std::string>());
    } catch (const std::exception&) {
      return std::string("\"") + key + "\" is not JSON";
    }
  }
  if (!a.is_object()) return std::string("\"") + key + "\" is not a JSON object";
  out.arguments = a.dump(-1, ' ', false, Ordered::error_handler_t::replace);
  return "";
}
}  // namespace

std::string hermes_tools_text(const std::vector<ToolDef>& tools) {
  if (tools.empty()) return "";
  std::string s =
      "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function "
      "signatures within <tools></tools> XML tags:\n<tools>";
  for (const ToolDef& t : tools) s += "\n" + chat::python_json_dumps(t.json);
  s += "\n</tools>\n\nFor each function call, return a json object with function name and arguments within "
       "<tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n"
       "</tool_call>";
  return s;
}

std::string_view call_opener(ToolSyntax s) { return s == ToolSyntax::kHermes ? "<tool_call>" : s == ToolSyntax::kLlamaJson ? "{" : ""; }
std::string_view call_closer(ToolSyntax s) { return s == ToolSyntax::kHermes ? "</tool_call>" : ""; }

ParsedReply parse_reply(ToolSyntax syntax, std::string_view text, const std::vector<ToolDef>& tools, bool parallel) {
  ParsedReply r;
  if (syntax == ToolSyntax::kNone || tools.empty()) {  // no tools offered: all of it is text
    r.content = std::string(text);
    r.has_content = !only_space(text);
    return r;
  }
  if (syntax == ToolSyntax::kLlamaJson) {
    std::string_view body = trim(text);
    if (body.rfind("<|python_tag|>", 0) == 0) body = trim(body.substr(14));
    ParsedCall c;
    std::string why;
    if (!body.empty() && body.front() == '{') {
      why = read_call(body, "parameters", tools, c);
      if (!why.empty() && why.find("no \"parameters\"") == 0) why = read_call(body, "arguments", tools, c);
      if (why.empty()) {
        r.calls.push_back(std::move(c));
        return r;
      }
      r.errors.push_back("the reply is no tool call: " + why);
    }
    r.content = std::string(text);
    r.has_content = !only_space(text);
    return r;
  }
  const std::string_view open = "<tool_call>", close = "</tool_call>";
  size_t at = 0;
  while (at < text.size()) {
    const size_t o = text.find(open, at);
    if (o == std::string_view::npos) {
      r.content += text.substr(at);
      break;
    }
    r.content += text.substr(at, o - at);
    const size_t c = text.find(close, o + open.size());
    if (c == std::string_view::npos) {  // cut inside a call: its text stays content
      r.open_call = true;
      r.errors.push_back("a tool call was opened and not closed");
      r.content += text.substr(o);
      break;
    }
    ParsedCall call;
    std::string why = read_call(trim(text.substr(o + open.size(), c - o - open.size())), "arguments", tools, call);
    if (why.empty() && !parallel && !r.calls.empty()) why = "a second call while parallel_tool_calls is false";
    if (why.empty()) {
      r.calls.push_back(std::move(call));
    } else {
      r.errors.push_back("tool call " + std::to_string(r.calls.size() + r.errors.size()) + ": " + why);
      r.content += text.substr(o, c + close.size() - o);
    }
    at = c + close.size();
  }
  r.has_content = !only_space(r.content);
  return r;
}

}  // namespace akv::chat
