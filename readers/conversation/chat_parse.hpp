// Conversation files -> Conversation (spec/input.md IN2, IN3): the parser of untrusted
// conversation JSON; the Conversation and its spans are reference/chat.hpp.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

#include "readers/json_limited.hpp"
#include "reference/chat.hpp"

namespace akv {

/// The parser's limits (IN3): a file of at most kMaxConversationBytes, no value nested deeper
/// than kMaxJsonDepth arrays/objects (the top-level object is depth 1).
inline constexpr size_t kMaxConversationBytes = size_t{64} << 20;
inline constexpr int kMaxJsonDepth = 256;
/// The same limits for the JSON reader: conversations and the request bodies akv serve reads.
inline constexpr readers::JsonLimits kConversationJson{kMaxConversationBytes, kMaxJsonDepth, "spec/input.md IN3"};

/// Parses a conversation. Throws Error(kBadInput) with a one-line message naming the problem
/// and where (`messages[3].role: unknown role 'robot' ...`): malformed JSON or UTF-8, too
/// large or too deeply nested, missing or empty "messages", unknown role, a field of a wrong
/// type or on the wrong role, a field that reaches the model but has no token form (image,
/// audio or file parts, "audio"), an unknown field, a "poisoned" entry that is not an
/// integer, out of range or repeated; a "tokens" key that is not a non-empty array of integers
/// in [0, 2^31), or that comes with content, name, tool_call_id, refusal or tool calls.
Conversation parse_conversation(std::string_view json);

/// Reads and parses a file; errors are prefixed with the path. A missing or unreadable path,
/// a directory, or a file over kMaxConversationBytes is Error(kBadInput).
Conversation load_conversation(const std::string& path);

}  // namespace akv
