// The SentencePiece tokenizer as llama.cpp runs it for `tokenizer.ggml.model = "llama"`
// (llama-vocab.cpp, llm_tokenizer_spm; spec/tokenizer.md T12): spaces as U+2581, characters
// merged by token score, byte fallback to <0xXX>. Built from plain vectors or from a GGUF file's
// tokenizer metadata; immutable once built, so one instance serves every thread.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "readers/gguf/gguf.hpp"
#include "readers/tokenizer/bpe_tokenizer.hpp"  // TokenType
#include "reference/config.hpp"

namespace akv::readers {

class SpmTokenizer {
 public:
  /// What a vocabulary says besides its tokens (T12). `bos`/`eos` are ids (nullopt: none);
  /// `add_space_prefix`: a U+2581 before the text; `add_bos`: encode(text, true) starts with bos.
  struct Options {
    std::optional<Token> bos, eos;
    bool add_space_prefix = true;
    bool add_bos = true;
  };

  /// Builds a tokenizer (T12). `tokens[i]` is token i's text (U+2581 for a space, `<0xXX>` for a
  /// byte token); `scores[i]` its merge score (higher merges first), or empty (all 0); `types`
  /// TokenType values, one per token, or empty (all normal). Throws Error(kBadModel) with one line
  /// `SOURCE: FIELD: problem` when: there are no tokens or more than 2^31 - 1; a token is empty,
  /// not valid UTF-8 or repeats another; scores or types differ from the tokens in count; a score
  /// is NaN; a type is outside 0..6; a byte token (type 6) is not `<0xXX>` (two upper-case hex
  /// digits); some byte has no fallback token (neither `<0xXX>` nor, for ASCII, its own
  /// character); bos/eos is outside the vocabulary, or add_bos is set without a bos.
  SpmTokenizer(std::vector<std::string> tokens, std::vector<float> scores, std::vector<int32_t> types, Options opt,
               const std::string& source = "tokenizer");

  /// The tokenizer of a GGUF file (T12): `tokenizer.ggml.model` must be "llama";
  /// `tokenizer.ggml.pre` absent or "default"; `tokenizer.ggml.tokens` a string array;
  /// `tokenizer.ggml.scores` (optional) a float32 or int32 array; `tokenizer.ggml.token_type`
  /// (optional) an int32 array; `tokenizer.ggml.bos_token_id` (default 1, llama.cpp's, when
  /// inside the vocabulary) / `eos_token_id` optional integers; `tokenizer.ggml.add_bos_token` and
  /// `tokenizer.ggml.add_space_prefix` optional bools (default true). Everything is copied.
  /// Throws Error(kBadModel) naming the key (missing, mistyped, and every check of the constructor).
  static SpmTokenizer from_gguf(const GgufFile& f);

  /// Text -> ids (T12): empty text is no tokens (bos alone when asked); otherwise a space first
  /// when add_space_prefix, each ASCII space as U+2581, the bytes cut into symbols by their lead
  /// byte (llama.cpp's reading: no UTF-8 check), adjacent symbols merged while their
  /// concatenation is a token, the highest score first and the leftmost among equal scores;
  /// each final symbol is its token, or its bytes' fallback tokens. Control, user-defined and
  /// unknown tokens are never made from text (T6). `with_bos` (llama.cpp's add_special): bos
  /// first when the vocabulary's add_bos says so. Never throws for any bytes.
  std::vector<Token> encode(std::string_view text, bool with_bos = false) const;

  /// Ids -> bytes: a byte token is its byte, any other token its text with U+2581 as a space
  /// (control, user-defined and unknown tokens as their text, T6); no space is removed. Throws
  /// Error(kInvalidToken) for an id outside [0, vocab_size()).
  std::string decode(const std::vector<Token>& ids) const;

  int vocab_size() const { return static_cast<int>(tokens_.size()); }
  /// Token `id`'s text as stored. Precondition: 0 <= id < vocab_size().
  const std::string& token_text(Token id) const { return tokens_[id]; }
  TokenType token_type(Token id) const { return types_[id]; }
  float score(Token id) const { return scores_[id]; }
  /// The id of a token that text may produce (not control, user-defined or unknown), if any.
  std::optional<Token> find(std::string_view text) const;
  /// The fallback token of byte b (T12): `<0xXX>`, else the byte's own one-character token.
  Token byte_token(uint8_t b) const { return byte_token_[b]; }
  const Options& options() const { return opt_; }

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::vector<std::string> tokens_;
  std::vector<float> scores_;
  std::vector<TokenType> types_;
  std::unordered_map<std::string, Token, Hash, std::equal_to<>> index_;  // text -> id, tokens text may produce
  Token byte_token_[256];
  std::vector<int16_t> token_byte_;  // the byte a byte token stands for, else -1
  Options opt_;
};

}  // namespace akv::readers
