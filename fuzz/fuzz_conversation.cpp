// libFuzzer target for the conversation parser (spec/input.md IN8; docs/fuzzing.md).
// For any bytes: parse_conversation either returns or throws akv::Error with a one-line
// message (anything else, a crash or a sanitizer report, is a finding); a parsed conversation
// encodes every message to ids in [0, 2^31), and its JSON round trip gives the same spans and
// "poisoned" list.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "fuzz/finding.hpp"
#include "readers/conversation/chat_parse.hpp"
#include "reference/chat.hpp"
#include "reference/error.hpp"

using akv::fuzz::finding;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  akv::Conversation c;
  try {
    c = akv::parse_conversation(text);
  } catch (const akv::Error& e) {
    if (std::string_view(e.what()).find('\n') != std::string_view::npos) finding("an error message of two lines");
    return 0;
  }
  std::vector<std::vector<akv::Token>> spans;
  for (const akv::Message& m : c.messages) {
    spans.push_back(akv::encode_message(m));
    if (spans.back().empty()) finding("an empty span");
    for (akv::Token t : spans.back())
      if (t < 0) finding("a negative token id");
  }
  const akv::Conversation back = akv::parse_conversation(akv::conversation_to_json(c));  // throws: a finding
  if (back.messages.size() != c.messages.size() || back.poisoned != c.poisoned) finding("round trip changed the shape");
  for (size_t i = 0; i < c.messages.size(); ++i)
    if (akv::encode_message(back.messages[i]) != spans[i]) finding("round trip changed a span");
  return 0;
}
