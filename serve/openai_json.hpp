// The JSON shapes of OpenAI's chat completions API that akv serve writes (spec/serving.md SV2,
// SV5, SV6): errors, logprobs, usage, the `akv` object, a completion and a stream chunk.
#pragma once
#include <nlohmann/json.hpp>

#include <string>

#include "serve/api_error.hpp"
#include "serve/engine.hpp"
#include "serve/http_types.hpp"

namespace akv::serve {

/// JSON text of `j`, invalid UTF-8 in strings replaced (IN6): what every response body is.
std::string json_text(const nlohmann::json& j);

/// OpenAI's error shape {"error": {"message", "type", "param", "code"}} as a response with the
/// error's status (and Retry-After when it has one).
HttpResponse error_response(const ApiError& e);

/// SV5: one token's logprobs entry: its text, logprob, exact bytes and the top alternatives.
nlohmann::json logprob_json(const ChatEncoder& enc, const TokenLogprob& lp, const std::string& text, const std::string& bytes);

/// SV3: the `akv` object of a reply (`tool_call_errors`: what of the reply could not be read as a
/// tool call, SV15).
nlohmann::json akv_json(const ReplyStats& s, const std::vector<std::string>& tool_call_errors = {});

/// SV15: the assistant message of a reply: content (null when only whitespace around calls),
/// and tool_calls [{id, type "function", function {name, arguments}}] when it made any.
nlohmann::json message_json(const Reply& r);

/// SV2: `usage`, with prompt_tokens_details.cached_tokens = the tokens reused (SV3).
nlohmann::json usage_json(const Reply& r);

/// The message-to-span map of SV3: [{"message": i | null (the template's preamble), "tokens": n}].
nlohmann::json spans_json(const std::vector<SpanOfMessage>& spans);

}  // namespace akv::serve
