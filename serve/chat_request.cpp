#include "serve/chat_request.hpp"

#include <nlohmann/json.hpp>

#include <cmath>

#include "reference/error.hpp"

namespace akv::serve {
namespace {
using json = nlohmann::json;

[[noreturn]] void bad(const std::string& field, const std::string& why) {
  throw Error(ErrorCode::kBadInput, field + ": " + why);
}

double number(const json& j, const char* field) {
  if (!j.is_number()) bad(field, "expected a number, got " + std::string(j.type_name()));
  const double v = j.get<double>();
  if (!std::isfinite(v)) bad(field, "not a finite number");
  return v;
}

int64_t integer(const json& j, const char* field) {
  if (!j.is_number_integer()) bad(field, "expected an integer, got " + std::string(j.type_name()));
  if (j.is_number_unsigned() && j.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) bad(field, "out of range (above 2^63 - 1)");
  return j.get<int64_t>();
}
bool has_tool(const ChatRequest& r, const std::string& name) {
  for (const ToolDef& t : r.conv.tools)
    if (t.name == name) return true;
  return false;
}

// SV15, SV16: tool_choice (or the legacy function_call), parallel_tool_calls, response_format.
void read_tool_options(const json& j, ChatRequest& r) {
  const bool tools = !r.conv.tools.empty();
  r.tool_choice = tools ? ToolChoice::kAuto : ToolChoice::kNone;
  const bool choice = j.contains("tool_choice") && !j["tool_choice"].is_null();
  const bool legacy = j.contains("function_call") && !j["function_call"].is_null();
  if (choice && legacy) bad("function_call", "give tool_choice or the legacy function_call, not both");
  if (choice || legacy) {
    const char* f = choice ? "tool_choice" : "function_call";
    const json& c = j[f];
    if (c.is_string()) {
      const std::string v = c.get<std::string>();
      if (v == "none") r.tool_choice = ToolChoice::kNone;
      else if (v == "auto") r.tool_choice = ToolChoice::kAuto;
      else if (v == "required" && choice) r.tool_choice = ToolChoice::kRequired;
      else bad(f, "'" + v + "' is none of " + (choice ? "none, auto, required" : "none, auto") + " or a named function");
    } else if (c.is_object()) {
      std::string name;
      if (choice) {
        if (!c.contains("type") || c["type"] != "function" || !c.contains("function") || !c["function"].is_object() ||
            !c["function"].contains("name") || !c["function"]["name"].is_string() || c.size() != 2 || c["function"].size() != 1)
          bad(f, "expected {\"type\": \"function\", \"function\": {\"name\": NAME}}");
        name = c["function"]["name"].get<std::string>();
      } else {
        if (!c.contains("name") || !c["name"].is_string() || c.size() != 1) bad(f, "expected {\"name\": NAME}");
        name = c["name"].get<std::string>();
      }
      if (!has_tool(r, name)) bad(f, "'" + name + "' is not one of the request's tools");
      r.tool_choice = ToolChoice::kNamed;
      r.tool_choice_name = name;
    } else {
      bad(f, "expected a string or an object, got " + std::string(c.type_name()));
    }
    if (!tools && r.tool_choice != ToolChoice::kNone) bad(f, "the request has no tools to choose from");
  }
  if (j.contains("parallel_tool_calls") && !j["parallel_tool_calls"].is_null()) {
    if (!j["parallel_tool_calls"].is_boolean()) bad("parallel_tool_calls", "expected true or false");
    r.parallel_tool_calls = j["parallel_tool_calls"].get<bool>();
  }
  if (j.contains("response_format") && !j["response_format"].is_null()) {
    const json& f = j["response_format"];
    if (!f.is_object() || !f.contains("type") || !f["type"].is_string()) bad("response_format", "expected {\"type\": ...}");
    const std::string type = f["type"].get<std::string>();
    for (const auto& [k, v] : f.items())
      if (k != "type" && !(k == "json_schema" && type == "json_schema")) bad("response_format." + k, "unknown field");
    if (type == "text") {
      r.response_format = ResponseFormat::kText;
    } else if (type == "json_object") {
      r.response_format = ResponseFormat::kJsonObject;
    } else if (type == "json_schema") {
      if (!f.contains("json_schema") || !f["json_schema"].is_object()) bad("response_format.json_schema", "expected an object");
      const json& s = f["json_schema"];
      for (const auto& [k, v] : s.items())
        if (k != "name" && k != "schema" && k != "strict" && k != "description") bad("response_format.json_schema." + k, "unknown field");
      if (!s.contains("name") || !s["name"].is_string()) bad("response_format.json_schema.name", "expected a string");
      if (!s.contains("schema") || !s["schema"].is_object()) bad("response_format.json_schema.schema", "expected a JSON schema object");
      if (s.contains("strict") && !s["strict"].is_boolean() && !s["strict"].is_null()) bad("response_format.json_schema.strict", "expected true or false");
      r.response_format = ResponseFormat::kJsonSchema;
      r.json_schema_name = s["name"].get<std::string>();
      r.json_schema_strict = s.contains("strict") && s["strict"].is_boolean() && s["strict"].get<bool>();
      r.json_schema = nlohmann::ordered_json::parse(r.body)["response_format"]["json_schema"]["schema"].dump();
    } else {
      bad("response_format.type", "'" + type + "' is none of text, json_object, json_schema");
    }
    if (r.response_format != ResponseFormat::kText && r.tool_choice != ToolChoice::kNone)
      bad("response_format", "a JSON reply and tool calls cannot both constrain one reply: give tool_choice \"none\" with it "
                             "(spec/serving.md SV16)");
  }
}
}  // namespace

ChatRequest parse_chat_request(std::string_view body) {
  if (body.size() > kMaxRequestBytes)
    bad("body", std::to_string(body.size()) + " bytes exceed the limit of " + std::to_string(kMaxRequestBytes));
  ChatRequest r;
  r.body = std::string(body);
  r.conv = parse_conversation(body);  // IN2/IN3: depth, size, unknown and model-reaching fields
  const json j = json::parse(body);  // parse_conversation accepted it: well-formed, bounded
  if (j.contains("poisoned"))
    bad("poisoned", "a witness file's field; a server evicts by dropping the message from the request or with POST "
                    "/v1/sessions/{id}/evict (spec/serving.md SV3)");
  if (j.contains("model") && !j["model"].is_null()) {
    if (!j["model"].is_string()) bad("model", "expected a string");
    r.model = j["model"].get<std::string>();
  }
  if (j.contains("prompt_cache_key") && !j["prompt_cache_key"].is_null()) {
    if (!j["prompt_cache_key"].is_string()) bad("prompt_cache_key", "expected a string");
    r.prompt_cache_key = j["prompt_cache_key"].get<std::string>();
  }
  if (j.contains("n") && !j["n"].is_null() && integer(j["n"], "n") != 1) bad("n", "only n = 1 is served");
  for (const char* f : {"max_tokens", "max_completion_tokens"})
    if (j.contains(f) && !j[f].is_null()) {
      const int64_t v = integer(j[f], f);
      if (v < 1) bad(f, "must be >= 1");
      if (r.max_tokens != 0 && r.max_tokens != static_cast<size_t>(v))
        bad(f, "differs from max_tokens: give one of them, or both equal");
      r.max_tokens = static_cast<size_t>(v);
    }
  if (j.contains("temperature") && !j["temperature"].is_null()) {
    r.sampler.temperature = number(j["temperature"], "temperature");
    if (r.sampler.temperature < 0 || r.sampler.temperature > 2) bad("temperature", "must be in [0, 2]");
  }
  if (j.contains("top_p") && !j["top_p"].is_null()) {
    r.sampler.top_p = number(j["top_p"], "top_p");
    if (!(r.sampler.top_p > 0 && r.sampler.top_p <= 1)) bad("top_p", "must be in (0, 1]");
  }
  if (j.contains("seed") && !j["seed"].is_null()) {
    // Every seed in [0, 2^64) is its own draw; none is folded onto another.
    if (!j["seed"].is_number_unsigned()) bad("seed", "expected an integer in [0, 2^64), got " + j["seed"].dump());
    r.sampler.seed = j["seed"].get<uint64_t>();
    r.seed_given = true;
  } else {
    r.sampler.seed = kDefaultSeed;  // the reply stays a function of the request (SV4)
  }
  if (j.contains("stop") && !j["stop"].is_null()) {
    const json& s = j["stop"];
    if (s.is_string()) r.stop.push_back(s.get<std::string>());
    else if (s.is_array()) {
      if (s.size() > 4) bad("stop", "at most 4 strings");
      for (const json& x : s) {
        if (!x.is_string()) bad("stop", "expected strings");
        r.stop.push_back(x.get<std::string>());
      }
    } else {
      bad("stop", "expected a string or an array of strings");
    }
    for (const std::string& x : r.stop)
      if (x.empty()) bad("stop", "an empty string");
  }
  if (j.contains("stream") && !j["stream"].is_null()) {
    if (!j["stream"].is_boolean()) bad("stream", "expected true or false");
    r.stream = j["stream"].get<bool>();
  }
  if (j.contains("stream_options") && !j["stream_options"].is_null()) {
    const json& o = j["stream_options"];
    if (!o.is_object()) bad("stream_options", "expected an object");
    for (const auto& [k, v] : o.items()) {
      if (k != "include_usage") bad("stream_options." + k, "unknown field");
      if (!v.is_boolean()) bad("stream_options.include_usage", "expected true or false");
      r.include_usage = v.get<bool>();
    }
    if (!r.stream) bad("stream_options", "only with stream: true");
  }
  if (j.contains("logprobs") && !j["logprobs"].is_null()) {
    if (!j["logprobs"].is_boolean()) bad("logprobs", "expected true or false");
    r.logprobs = j["logprobs"].get<bool>();
  }
  if (j.contains("top_logprobs") && !j["top_logprobs"].is_null()) {
    const int64_t v = integer(j["top_logprobs"], "top_logprobs");
    if (v < 0 || v > 20) bad("top_logprobs", "must be in [0, 20]");
    if (!r.logprobs) bad("top_logprobs", "needs logprobs: true");
    r.top_logprobs = static_cast<int>(v);
  }
  for (const char* f : {"presence_penalty", "frequency_penalty"})
    if (j.contains(f) && !j[f].is_null() && number(j[f], f) != 0)
      bad(f, "akv's sampler has no penalties (spec/serving.md SV4); only 0 is accepted");
  if (j.contains("top_k") && !j["top_k"].is_null()) bad("top_k", "not an OpenAI field and not part of akv's sampler (SV4)");
  if (j.contains("logit_bias") && !j["logit_bias"].is_null() && !(j["logit_bias"].is_object() && j["logit_bias"].empty()))
    bad("logit_bias", "akv's sampler has no logit bias (spec/serving.md SV4)");
  read_tool_options(j, r);
  return r;
}

}  // namespace akv::serve
