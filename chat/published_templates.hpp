// The published chat templates akv renders (spec/tokenizer.md CT13), recognised in a model file
// by the SHA-256 of their text: a GGUF file that carries one of them is encoded by its turn
// template (CT7-CT9), not refused as a template other than SmolLM2's ChatML (CT1).
#pragma once
#include <optional>
#include <string_view>
#include <vector>

#include "chat/turn_templates.hpp"

namespace akv {

/// One published template: the model card it comes from, the digest of its text, the turn
/// template that renders it.
struct PublishedTemplate {
  const char* source;  // e.g. "Qwen/Qwen2.5-7B-Instruct"
  const char* sha256;  // lower-case hex of the text with at most one trailing '\n' removed
  chat::TurnTemplate renders_as;
};

/// The pinned templates (CT13's table), in a stable order.
const std::vector<PublishedTemplate>& published_templates();

/// The turn template whose published text `chat_template` is, or nullopt. One trailing '\n'
/// is removed before hashing (Jinja drops it: keep_trailing_newline is false), so a template
/// read from a .jinja file and from a GGUF's tokenizer.chat_template compare equal. Any other
/// difference, even whitespace, gives nullopt: akv never renders a template it has not checked.
std::optional<chat::TurnTemplate> published_turn_template(std::string_view chat_template);

}  // namespace akv
