// The grammar a request's reply is drawn under (spec/serving.md SV14, SV15, SV16): compiled
// from its tool_choice and tools, or its response_format, over the model's vocabulary.
#pragma once
#include <optional>

#include "chat/grammar.hpp"
#include "reference/chat_encoder.hpp"
#include "serve/chat_request.hpp"

namespace akv::serve {

/// The grammar of `q`'s reply, or none (no tools in play and response_format text):
/// - response_format json_object: one JSON object; json_schema: one value of the schema (its
///   errors named under "response_format.json_schema.schema");
/// - tools with tool_choice required: calls only, of any tool (several unless
///   parallel_tool_calls is false); a named function: one call of that tool; auto: free text in
///   which a call, once `syntax`'s opener is written, is whole and valid (lazy);
/// - tool_choice none: no grammar.
/// `syntax` is the model's ChatEncoder::tool_syntax() (kNone: no grammar for tools, the request
/// was refused before). Throws Error(kBadInput) naming the JSON path of a schema or keyword the
/// engine does not enforce (chat/json_schema_check), for a tool "tools[i].function.parameters...".
std::optional<chat::Grammar> request_grammar(const ChatRequest& q, ToolSyntax syntax, const chat::GrammarVocabulary& vocab);

}  // namespace akv::serve
