// A conversation's token form under one model's tokenizer and chat template: the seam between
// the parsed messages (reference/chat.hpp) and the spans a Session appends (spec/input.md IN1,
// spec/tokenizer.md for real models).
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "reference/chat.hpp"

namespace akv {

/// A conversation as spans. `preamble` holds tokens that belong to no message (ChatML's default
/// system message when message 0 is not `system`); it is appended first, as its own span, and
/// is never evicted. spans[i] is message i's span (one span per message, IN1).
struct EncodedConversation {
  std::vector<Token> preamble;
  std::vector<std::vector<Token>> spans;
  /// Message fields the chat template does not render, as paths (spec/tokenizer.md CT6):
  /// reported with the conversation's own ignored fields (IN2).
  std::vector<std::string> ignored;
  size_t tokens() const {
    size_t n = preamble.size();
    for (const auto& s : spans) n += s.size();
    return n;
  }
};

/// How a model family writes a tool call in its replies (spec/tokenizer.md CT15).
enum class ToolSyntax {
  kNone,      // the template has no tool syntax and akv defines none: tools are refused
  kHermes,    // <tool_call>\n{"name": N, "arguments": A}\n</tool_call>, any number, between text
  kLlamaJson  // the whole reply is {"name": N, "parameters": A} (Llama 3.1 / 3.2)
};

/// Turns messages into token spans for one vocabulary. A message with raw "tokens" is exactly
/// those ids under every encoder. Implementations are immutable and thread-safe.
class ChatEncoder {
 public:
  virtual ~ChatEncoder() = default;
  /// "fixture" (byte tokens, spec/model.md M5) or "chatml" (a real model's BPE + template).
  virtual std::string name() const = 0;
  /// The ids this encoder can produce are [0, vocab_size()): a model must have at least that
  /// many logits (spec/gguf.md C6, checked at load).
  virtual int vocab_size() const = 0;
  /// The spans of `c`. Throws Error(kInvalidToken) for a raw id outside the vocabulary.
  virtual EncodedConversation encode(const Conversation& c) const = 0;
  /// Plain text -> ids, no template and no special-token parsing (special text stays text).
  virtual std::vector<Token> tokenize(std::string_view text) const = 0;
  /// Readable text of ids (specials as their names); for reports and `akv tokenize`.
  virtual std::string render(const std::vector<Token>& ids) const = 0;
  /// The exact bytes of ids, as the tokenizer decodes them (specials as their names, an id
  /// outside the vocabulary as `<|invalid N|>`), with no escaping: a token may be part of a
  /// UTF-8 character. What a server matches stop strings on and reports as
  /// `logprobs.content[].bytes` (spec/serving.md SV2).
  virtual std::string bytes(const std::vector<Token>& ids) const = 0;
  /// Whether `id` stands for no text: a control token (ChatML's `<|im_start|>`, the fixture's
  /// markers and reserved ids), the unknown token, an unused slot, or an id outside the
  /// vocabulary; bytes() renders such a token by its name. A user-defined token (GGUF type 4,
  /// Hugging Face's `"special": false`, e.g. Qwen's `<tool_call>`) stands for its text and is
  /// not control. What a grammar over the reply's bytes never admits inside the text it
  /// constrains (chat/grammar.hpp, spec/serving.md SV14).
  virtual bool is_control(Token id) const = 0;
  /// The tokens that open the model's reply (spec/leakage.md L9): ChatML's generation prompt
  /// `<|im_start|>assistant\n` (the special token, then "assistant\n" tokenized on its own, as
  /// CT3 tokenizes a message's text); the fixture's `<|assistant|>` marker. Never empty.
  virtual std::vector<Token> generation_prompt() const = 0;
  /// The token that closes a message: a reply ends when it is drawn (spec/serving.md SV1):
  /// ChatML's `<|im_end|>`, the fixture's `<|end|>`.
  virtual Token end_of_turn() const = 0;
  /// How this template's replies write a tool call (CT15); kHermes unless overridden.
  virtual ToolSyntax tool_syntax() const { return ToolSyntax::kHermes; }
};

/// The fixture encoder of the synthetic models: encode_message per message, no preamble.
/// `vocab` bounds raw token ids (check_token_ids).
std::shared_ptr<const ChatEncoder> make_fixture_encoder(int vocab);

}  // namespace akv
