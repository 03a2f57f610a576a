// OpenAI chat messages -> one span of tokens per message (spec/model.md M5).
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
  std::string arguments;  // JSON text, as the API carries it
};

struct Message {
  std::string role;  // system | user | assistant | tool
  std::string content;
  std::string name;          // tool messages: the function's name (optional)
  std::string tool_call_id;  // tool messages (optional)
  std::vector<ToolCall> tool_calls;  // assistant messages
  /// Raw token ids (the "tokens" key): when present the span is exactly these ids, and the
  /// message carries no content, name, tool_call_id or tool_calls (spec/model.md M5).
  std::optional<std::vector<Token>> tokens;
};

/// A conversation file: OpenAI chat JSON with a top-level "messages" array and an optional
/// "poisoned" array of message indexes (other keys are ignored).
struct Conversation {
  std::vector<Message> messages;
  std::vector<size_t> poisoned;
};

/// Parses a conversation. Throws Error(kBadInput) with a message naming the problem and
/// where: malformed JSON, missing or non-array "messages", empty conversation, unknown
/// role, content of a wrong type, a "poisoned" index out of range or repeated; a "tokens"
/// key that is not a non-empty array of integers in [0, 2^31), or that comes with content,
/// name, tool_call_id or tool_calls.
Conversation parse_conversation(std::string_view json);

/// Reads and parses a file; an unreadable file is Error(kBadInput).
Conversation load_conversation(const std::string& path);

/// The span of one message (M5):
///   system/user:  <|role|> content <|end|>
///   assistant:    <|assistant|> content { <|call|> name <|args|> arguments <|id|> id } <|end|>
///   tool:         <|tool|> name <|id|> tool_call_id <|result|> content <|end|>
/// Empty optional fields drop their marker with them (no <|id|> without an id).
/// A message with raw "tokens" is exactly those ids (no role or end marker added).
std::vector<Token> encode_message(const Message& m);

/// Serialises a conversation back to JSON (messages and poisoned), the inverse of parse;
/// a message with raw tokens is written as {"role", "tokens"}.
std::string conversation_to_json(const Conversation& c);

}  // namespace akv
