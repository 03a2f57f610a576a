// OpenAI's Responses API (POST /v1/responses) on the same engine (spec/serving.md SV17): a
// Responses body is read as the chat request it means, and the reply written as a response
// object (or its stream of events). Nothing of the body is dropped: each field is mapped,
// ignored as transport, or refused naming it.
#pragma once
#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

#include "serve/engine.hpp"

namespace akv::serve {

/// The chat completions body a Responses body means (SV17): `instructions` as a leading system
/// message; `input` (a string: one user message; items: messages with `input_text` /
/// `output_text` parts, `function_call` items as an assistant's tool calls, consecutive ones
/// joined, `function_call_output` items as tool messages); `tools` (`{type: "function", name,
/// description, parameters, strict}`) as chat tools; `tool_choice`, `parallel_tool_calls`,
/// `max_output_tokens`, `temperature`, `top_p`, `stream`, `text.format` (as response_format),
/// `prompt_cache_key` and the transport fields as they are. Throws Error(kBadInput) naming the
/// field: an item or part type akv does not read, `previous_response_id` (akv keeps no
/// responses: send the whole input), `reasoning` other than null, an unknown field.
std::string chat_body_of_response(std::string_view body);

/// The response object of a reply (SV17): `id` ("resp_" + the request's digest), `status`
/// (completed, or incomplete with `incomplete_details.reason` max_output_tokens), `output`
/// (a message item with one output_text part when the reply has content, then a
/// function_call item per tool call), `usage` (input, output and cached tokens) and the `akv`
/// object.
nlohmann::json response_json(const std::string& id, int64_t created, const std::string& model, const Reply& r,
                             const nlohmann::json& request);

}  // namespace akv::serve
