// A redaction (spec/operations.md O10): a string removed from inside a message, such as an
// expired API key in a user request, where evicting the whole message would lose the rest.
#pragma once
#include <string>
#include <vector>

#include "reference/chat.hpp"

namespace akv {

/// Remove every occurrence of `text` from message `message` (0-based).
struct Redaction {
  size_t message = 0;
  std::string text;
};

/// What a redaction removed, without the string itself (reports never repeat a secret).
struct RedactionCount {
  size_t message = 0;
  size_t bytes = 0;        // the string's length in bytes
  size_t occurrences = 0;  // how often it was removed
};

/// `conv` with every occurrence of each redaction's text removed, left to right without
/// overlaps, from its message's content, refusal and tool-call arguments (the text fields a
/// template renders); `counts` (may be null) gets one entry per redaction. Error(kBadInput),
/// naming the redaction (never its text): a message index out of range, an empty string, a
/// message of raw token ids (M5: no text to edit), a string that does not occur there.
Conversation redacted(const Conversation& conv, const std::vector<Redaction>& redactions,
                      std::vector<RedactionCount>* counts = nullptr);

/// "N:STRING" (the CLI's --redact) as a Redaction: N a decimal message index, STRING
/// non-empty, everything after the first ':'. Error(kBadInput) naming the flag otherwise.
Redaction parse_redaction(const std::string& arg);

}  // namespace akv
