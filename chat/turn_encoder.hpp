// A turn template (turn_templates.hpp) over a GGUF file's tokenizer, as a ChatEncoder
// (spec/tokenizer.md CT6, CT10).
#pragma once
#include <memory>

#include "readers/gguf/gguf.hpp"
#include "readers/tokenizer/bpe_tokenizer.hpp"
#include "readers/tokenizer/spm_tokenizer.hpp"
#include "chat/turn_templates.hpp"
#include "reference/chat_encoder.hpp"

namespace akv::chat {

/// The encoder of template `t` over the tokenizer of `f` (byte-level BPE for
/// tokenizer.ggml.model gpt2, SentencePiece for llama). Each run of text between two of the
/// template's special tokens is tokenized as one text, as llama.cpp and Hugging Face tokenize a
/// rendered conversation; each token goes to the message that holds its first byte (CT10).
/// Throws Error(kBadModel) `FILE: tokens: NAME ...` when a special token the template writes is
/// not a control token of the vocabulary, and as the tokenizer readers do. Phi-3's
/// generation_prompt() is empty: its user turn already ends with `<|assistant|>\n` (CT9).
std::shared_ptr<const ChatEncoder> make_turn_encoder(TurnTemplate t, const readers::GgufFile& f);

/// The same over a tokenizer already built; `source` names it in errors.
std::shared_ptr<const ChatEncoder> make_turn_encoder(TurnTemplate t, readers::BpeTokenizer tok, const std::string& source);
std::shared_ptr<const ChatEncoder> make_turn_encoder(TurnTemplate t, readers::SpmTokenizer tok, const std::string& source);

}  // namespace akv::chat
