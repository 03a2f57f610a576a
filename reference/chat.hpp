// OpenAI chat messages -> one span of tokens per message (spec/model.md M5, spec/input.md
// IN1-IN3).
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "reference/config.hpp"

namespace akv {

struct ToolCall {
  std::string id;
  std::string name;
  std::string arguments;  // function: the JSON text the API carries; custom: the input text
  std::string kind = "function";  // "function" (arguments) or "custom" (free-form input)
};

struct Message {
  std::string role;  // system | developer | user | assistant | tool | function (IN1)
  std::string content;
  std::string name;          // the author's name; tool and function messages: the function's
  std::string tool_call_id;  // tool messages (optional)
  std::string refusal;       // assistant messages: the refusal field, then refusal parts
  std::vector<ToolCall> tool_calls;  // assistant messages: the legacy function_call first
  /// Raw token ids (the "tokens" key): when present the span is exactly these ids, and the
  /// message carries no content, name, tool_call_id, refusal or tool_calls (spec/model.md M5).
  std::optional<std::vector<Token>> tokens;
};

/// A tool the request offers the model (spec/input.md IN10): OpenAI's `tools[]` entry
/// `{"type": "function", "function": {"name", "description", "parameters", "strict"}}`, or a
/// legacy `functions[]` entry as the function tool holding it. Templates render `json`.
struct ToolDef {
  std::string name;        // function.name: 1-64 of [A-Za-z0-9_-]
  std::string json;        // the tool object as compact JSON, keys in the request's order
  std::string parameters;  // function.parameters as compact JSON ("" when absent)
  bool strict = false;     // function.strict
};

/// A conversation file: OpenAI chat JSON with a top-level "messages" array, optional "tools"
/// (or legacy "functions") and an optional "poisoned" array of message indexes.
struct Conversation {
  std::vector<Message> messages;
  std::vector<ToolDef> tools;  // in the request's order (IN10)
  std::vector<size_t> poisoned;
  /// Fields that never reach a model, as paths ("source", "messages[3].id"): read, not
  /// serialised, listed in reports as ignored (IN2).
  std::vector<std::string> ignored;
  /// The file it was read from ("" when parsed from text): errors name it.
  std::string source;
};

/// The span of one message (IN1):
///   system:     <|system|> [<|name|> name] content <|end|>
///   developer:  <|developer|> [<|name|> name] content <|end|>
///   user:       <|user|> [<|name|> name] content <|end|>
///   assistant:  <|assistant|> [<|name|> name] content [<|refusal|> refusal] {call} <|end|>
///               call = <|call|> name <|args|> arguments [<|id|> id]   (function)
///                    | <|call|> name <|input|> input [<|id|> id]      (custom)
///   tool:       <|tool|> name [<|id|> tool_call_id] <|result|> content <|end|>
///   function:   <|function|> name <|result|> content <|end|>
/// Empty optional fields drop their marker with them (no <|id|> without an id).
/// A message with raw "tokens" is exactly those ids (no role or end marker added).
std::vector<Token> encode_message(const Message& m);

/// The fixture span of the request's tools (IN10): `<|tools|>` + each tool's JSON, one a line,
/// + `<|end|>`; empty when there are none. Synthetic models append it first, as a preamble.
std::vector<Token> encode_tools(const std::vector<ToolDef>& tools);

/// Checks every raw token id against the vocabulary. Throws Error(kInvalidToken) naming the
/// file (when known), the message index and the token index: `f.json: messages[2].tokens[5]:
/// token id 300 outside the vocabulary [0, 288)`.
void check_token_ids(const Conversation& c, int vocab);

/// Serialises a conversation back to JSON (messages and poisoned), the inverse of parse: the
/// same text gives the same spans; a message with raw tokens is written as {"role", "tokens"}.
std::string conversation_to_json(const Conversation& c);

}  // namespace akv
