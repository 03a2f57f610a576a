// A POST /v1/chat/completions body, read strictly (spec/serving.md SV2): the messages through
// the conversation parser (spec/input.md IN1-IN3), the generation options here. Nothing is
// reinterpreted: an option akv does not honour is rejected, naming it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "readers/conversation/chat_parse.hpp"
#include "reference/chat.hpp"
#include "serve/sampler.hpp"

namespace akv::serve {

/// tool_choice (spec/serving.md SV15): whether and which tool the reply must call.
enum class ToolChoice { kNone, kAuto, kRequired, kNamed };

/// response_format (SV16): the reply as text, any JSON object, or JSON a schema describes.
enum class ResponseFormat { kText, kJsonObject, kJsonSchema };

struct ChatRequest {
  std::string body;             // the request's bytes, as received (the audit log holds them, SV9)
  Conversation conv;            // the messages, as every akv command reads them
  std::string model;            // "" when absent
  size_t max_tokens = 0;        // 0: not given (the server's default applies)
  std::vector<std::string> stop;  // up to 4 strings; generation ends before the first match
  SamplerParams sampler;
  bool stream = false;
  bool include_usage = false;   // stream_options.include_usage
  bool logprobs = false;
  int top_logprobs = 0;         // [0, 20]
  std::string prompt_cache_key; // "" when absent: the cache key that scopes reuse (SV10)
  bool seed_given = false;      // false: a draw (temperature > 0) uses kDefaultSeed (SV4)
  // Tools (the definitions are conv.tools, rendered into the prompt: spec/input.md IN10).
  ToolChoice tool_choice = ToolChoice::kNone;  // kAuto by default when tools are given
  std::string tool_choice_name;                // kNamed: the function
  bool parallel_tool_calls = true;
  ResponseFormat response_format = ResponseFormat::kText;
  std::string json_schema;                     // kJsonSchema: the schema, compact JSON
  std::string json_schema_name;
  bool json_schema_strict = false;
};

/// The seed of a draw whose request names none (SV4): replies stay a function of the request,
/// and the `akv` object reports the seed used.
inline constexpr uint64_t kDefaultSeed = 0;

/// The request's limits (SV6): body size (bytes) and the conversation parser's depth (IN3).
inline constexpr size_t kMaxRequestBytes = size_t{8} << 20;

/// Parses a body. Throws Error(kBadInput) with a message that names the field: malformed JSON,
/// every error of parse_conversation (IN2: unknown fields, fields that reach the model and
/// are not rendered), `n` other than 1, `temperature` outside [0, 2], `top_p` outside (0, 1],
/// a temperature above 0 without `seed`, `max_tokens` < 1, more than 4 `stop` strings or an
/// empty one, `top_logprobs` outside [0, 20] or without `logprobs`, a `poisoned` list (a
/// witness field), and a penalty, `top_k` or `logit_bias` other than the default (akv's
/// sampler has none: honouring it silently would be a reinterpretation).
ChatRequest parse_chat_request(std::string_view body);

}  // namespace akv::serve
