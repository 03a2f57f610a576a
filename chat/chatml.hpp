// ChatML: a real model's chat template over its BPE tokenizer, as a ChatEncoder
// (spec/tokenizer.md CT1-CT4).
#pragma once
#include <memory>
#include <string>
#include <string_view>

#include "readers/tokenizer/bpe_tokenizer.hpp"
#include "readers/gguf/gguf.hpp"
#include "reference/chat_encoder.hpp"

namespace akv::chat {

/// What akv reads from a ChatML chat template (CT1): the default system message the template
/// inserts when message 0 is not `system` (empty: none).
struct ChatmlTemplate {
  bool has_default_system = false;
  std::string default_system;
};

/// Recognises `text` as the ChatML template akv implements (CT1): SmolLM2's Jinja text, with or
/// without its default-system block. Throws Error(kBadModel) `SOURCE: tokenizer.chat_template:
/// ...` for any other template.
ChatmlTemplate parse_chatml_template(std::string_view text, const std::string& source = "chat template");

/// The ChatML encoder (CT1-CT4) over `tok`, following `chat_template` (the Jinja text). Throws
/// Error(kBadModel) when the template is not ChatML (CT1) or the vocabulary lacks
/// `<|im_start|>` / `<|im_end|>` as special tokens.
std::shared_ptr<const ChatEncoder> make_chatml_encoder(readers::BpeTokenizer tok, std::string_view chat_template,
                                                       const std::string& source = "tokenizer");

/// The ChatML encoder of a GGUF file: its tokenizer (readers::BpeTokenizer::from_gguf) and its
/// `tokenizer.chat_template`. Everything is copied: the file may be closed afterwards. Throws
/// Error(kBadModel) as from_gguf and the constructor above.
std::shared_ptr<const ChatEncoder> make_chatml_encoder(const readers::GgufFile& f);

/// The text of message `m` between `<|im_start|>` and `<|im_end|>` (CT2): the header line
/// (role, ` name=NAME`, ` tool_call_id=ID`), a newline, then the body (content, the refusal,
/// the tool calls). Not for raw-token messages.
std::string chatml_message_text(const Message& m);

}  // namespace akv::chat
