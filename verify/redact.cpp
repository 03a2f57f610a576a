#include "verify/redact.hpp"

#include <fmt/format.h>

#include "reference/error.hpp"

namespace akv {

namespace {
// Removes every occurrence of `s` from `text`; returns how many.
size_t erase_all(std::string& text, const std::string& s) {
  size_t n = 0, at = 0;
  std::string out;
  for (size_t hit; (hit = text.find(s, at)) != std::string::npos; at = hit + s.size(), ++n) out.append(text, at, hit - at);
  if (n == 0) return 0;
  out.append(text, at);
  text = std::move(out);
  return n;
}
}  // namespace

Conversation redacted(const Conversation& conv, const std::vector<Redaction>& redactions, std::vector<RedactionCount>* counts) {
  Conversation c = conv;
  if (counts) counts->clear();
  for (const Redaction& r : redactions) {
    if (r.message >= c.messages.size())
      throw Error(ErrorCode::kBadInput, fmt::format("--redact {}: message index out of range ({} messages)", r.message, c.messages.size()));
    if (r.text.empty()) throw Error(ErrorCode::kBadInput, fmt::format("--redact {}: the string is empty", r.message));
    Message& m = c.messages[r.message];
    if (m.tokens)
      throw Error(ErrorCode::kBadInput,
                  fmt::format("--redact {}: message {} is raw token ids (\"tokens\"), with no text to remove a string from", r.message, r.message));
    size_t n = erase_all(m.content, r.text) + erase_all(m.refusal, r.text);
    for (ToolCall& t : m.tool_calls) n += erase_all(t.arguments, r.text);
    if (n == 0)
      throw Error(ErrorCode::kBadInput,
                  fmt::format("--redact {}: the string ({} bytes) does not occur in message {}'s content, refusal or tool-call "
                              "arguments (the fields a template renders)",
                              r.message, r.text.size(), r.message));
    if (counts) counts->push_back({r.message, r.text.size(), n});
  }
  return c;
}

Redaction parse_redaction(const std::string& arg) {
  const size_t colon = arg.find(':');
  const std::string n = arg.substr(0, colon);
  if (colon == std::string::npos || n.empty() || n.size() > 9 || n.find_first_not_of("0123456789") != std::string::npos)
    throw Error(ErrorCode::kBadInput, "--redact: expected N:STRING, N a message index (0-based)");
  Redaction r{std::stoul(n), arg.substr(colon + 1)};
  if (r.text.empty()) throw Error(ErrorCode::kBadInput, fmt::format("--redact {}: the string after ':' is empty", r.message));
  return r;
}

}  // namespace akv
