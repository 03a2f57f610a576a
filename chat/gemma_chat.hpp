// Gemma's turn template over its SentencePiece tokenizer, as a ChatEncoder (spec/tokenizer.md
// CT12). The GGUF of Gemma 3 270M carries no chat template: the turns are those of Gemma 3's
// published template (the `chat_template` of google/gemma-3-270m-it's tokenizer_config.json).
#pragma once
#include <memory>
#include <string>

#include "readers/gguf/gguf.hpp"
#include "readers/tokenizer/spm_tokenizer.hpp"
#include "reference/chat_encoder.hpp"

namespace akv::chat {

/// The text of message `m` inside its Gemma turn (CT12): `content` with leading and trailing
/// ASCII whitespace removed (the template's `| trim`), then the refusal and tool calls as
/// ChatML writes them (CT2); a message whose role is not user or assistant, or that has a name
/// or tool_call_id, starts with ChatML's header line (role, ` name=`, ` tool_call_id=`) so that
/// every field reaching the model is in its span. Not for raw-token messages.
std::string gemma_turn_text(const Message& m);

/// The Gemma encoder (CT12) over `tok`: BOS as the preamble (when the vocabulary's add_bos says
/// so), each message one span `<start_of_turn>ROLE\nTEXT<end_of_turn>\n`, ROLE `model` for an
/// assistant and `user` otherwise; a system or developer message 0 followed by a user message is
/// folded into that user's turn as the template does (`<start_of_turn>user\n` SYSTEM `\n\n` in
/// span 0, USER `<end_of_turn>\n` in span 1). Throws Error(kBadModel) naming the token when the
/// vocabulary lacks `<start_of_turn>` / `<end_of_turn>` as control tokens.
std::shared_ptr<const ChatEncoder> make_gemma_encoder(readers::SpmTokenizer tok, const std::string& source = "tokenizer");

/// The Gemma encoder of a GGUF file whose tokenizer.ggml.model is llama (readers::SpmTokenizer::from_gguf).
std::shared_ptr<const ChatEncoder> make_gemma_encoder(const readers::GgufFile& f);

}  // namespace akv::chat
