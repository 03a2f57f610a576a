// Byte-level BPE, as GPT-2 and Hugging Face `tokenizers` define it, with SmolLM2's pre-tokenizer
// (spec/tokenizer.md T1-T6), or as llama.cpp runs it for Llama 3 and Qwen2 vocabularies (T9,
// T10). Built from plain vectors (tokens, merges, token types) or from a GGUF file's tokenizer
// metadata; immutable once built, so one instance serves every thread.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "readers/gguf/gguf.hpp"
#include "readers/tokenizer/pre_tokenizer.hpp"
#include "reference/config.hpp"

namespace akv::readers {

/// GGUF token types (llama.cpp's llama_token_type): 1 normal, 2 unknown, 3 control,
/// 4 user-defined, 5 unused, 6 byte. 0 (undefined) is read as normal.
enum class TokenType : int32_t { kUndefined = 0, kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6 };

/// Whether a token of type `t` stands for no text (ChatEncoder::is_control): control, unknown, unused.
inline bool is_control_type(TokenType t) {
  return t == TokenType::kControl || t == TokenType::kUnknown || t == TokenType::kUnused;
}

/// The UTF-8 text of byte `b`'s character in GPT-2's byte-level alphabet (T2): bytes 0x21-0x7E,
/// 0xA1-0xAC and 0xAE-0xFF stand for themselves; the other 68 bytes, in increasing order, for
/// U+0100, U+0101, ... (space 0x20 is U+0120 'Ġ', newline 0x0A is U+010A 'Ċ').
std::string byte_level_char(uint8_t b);

/// The checks every tokenizer makes of token `i` (T1, T12): its `text` is not empty and is valid
/// UTF-8, its `type` is in 0..6. Returns the type; throws Error(kBadModel) `SOURCE: FIELD: problem`.
TokenType checked_token(const std::string& source, size_t i, const std::string& text, int32_t type);

class BpeTokenizer {
 public:
  /// Builds a tokenizer (T1). `tokens[i]` is token i's text in the byte-level alphabet (T2);
  /// `merges` are "LEFT RIGHT" in rank order (rank = index); `types` are TokenType values, one per
  /// token, or empty (all normal); `pre` names the pre-tokenizer ("smollm", "llama-bpe", "qwen2"). `bos`/`eos` are
  /// optional ids. Throws Error(kBadModel) with one line `SOURCE: FIELD: problem` (`source` names
  /// the file) when: there are no tokens or more than 2^31 - 1; a token repeats another or is
  /// not valid UTF-8; types and tokens differ in count or a type is outside 0..6; there are no
  /// merges; a merge is not two tokens separated by one space, names a token that is not in the
  /// vocabulary, makes a token that is not in it, or repeats an earlier pair; `pre` is unknown;
  /// bos/eos is outside the vocabulary.
  BpeTokenizer(std::vector<std::string> tokens, const std::vector<std::string>& merges, std::vector<int32_t> types,
               std::string_view pre, std::optional<Token> bos = std::nullopt, std::optional<Token> eos = std::nullopt,
               const std::string& source = "tokenizer");

  /// The tokenizer of a GGUF file (T1): `tokenizer.ggml.model` must be "gpt2", `tokenizer.ggml.pre`
  /// a known pre-tokenizer, `tokenizer.ggml.tokens` and `tokenizer.ggml.merges` string arrays,
  /// `tokenizer.ggml.token_type` (optional) an int32 array; `tokenizer.ggml.bos_token_id` /
  /// `eos_token_id` optional. Everything is copied: the file may be closed afterwards. Throws
  /// Error(kBadModel) naming the key (a missing key, a wrong type, and every check of the
  /// constructor).
  static BpeTokenizer from_gguf(const GgufFile& f);

  /// The tokenizer of a Hugging Face tokenizer.json (T1): model.type BPE (no unk token, byte
  /// fallback, dropout, ignore_merges or prefix/suffix), no normalizer, the pre-tokenizer
  /// Sequence[Digits(individual_digits=true), ByteLevel(add_prefix_space=false, use_regex=true)]
  /// (smollm), model.vocab with ids 0..n-1, model.merges as "LEFT RIGHT" or [LEFT, RIGHT];
  /// added_tokens mark control (special) and user-defined tokens. No bos/eos (they live in
  /// tokenizer_config.json). The file is read by read_json_file: at most 256 MiB, 32 levels
  /// deep, no repeated key or NUL byte. Throws Error(kBadModel) `PATH: FIELD: problem` otherwise.
  static BpeTokenizer from_tokenizer_json(const std::string& path);

  /// Text -> ids. smollm (T3-T6): invalid UTF-8 bytes split off as their own pieces (T5), each
  /// valid run pre-tokenized (T3) and each piece merged by rank (T4). llama-bpe, qwen2 (T9, T10):
  /// the bytes read as llama.cpp reads them, pre-tokenized by its pattern, each piece merged by
  /// rank (T4), under llama-bpe a piece that is a normal token as a whole taken as is. Special-
  /// and user-defined-token text stays text (T6): the result never holds a control or
  /// user-defined token unless a merge makes one. Never throws for any bytes.
  std::vector<Token> encode(std::string_view text) const;

  /// Ids -> bytes (T6): each token's bytes (normal tokens through the inverse of T2; control and
  /// user-defined tokens as their text), concatenated. Throws Error(kInvalidToken) for an id
  /// outside [0, vocab_size()).
  std::string decode(const std::vector<Token>& ids) const;

  int vocab_size() const { return static_cast<int>(tokens_.size()); }
  /// Token `id`'s text as stored (byte-level alphabet). Precondition: 0 <= id < vocab_size().
  const std::string& token_text(Token id) const { return tokens_[id]; }
  TokenType token_type(Token id) const { return types_[id]; }
  /// The id whose stored text is exactly `text`, if any.
  std::optional<Token> find(std::string_view text) const;
  /// Control or user-defined (special) token.
  bool is_special(Token id) const { return types_[id] == TokenType::kControl || types_[id] == TokenType::kUserDefined; }
  std::optional<Token> bos() const { return bos_; }
  std::optional<Token> eos() const { return eos_; }
  PreTokenizer pre_tokenizer() const { return pre_; }
  /// The id of byte b's character (T2), or nullopt when the vocabulary lacks it (T4: dropped).
  std::optional<Token> byte_token(uint8_t b) const;
  size_t merge_count() const { return merges_.size(); }

 private:
  struct Merge {
    int32_t rank;
    Token result;
  };
  void bpe(std::string_view piece, std::vector<Token>& out) const;
  void encode_valid(std::string_view text, std::vector<Token>& out) const;
  void encode_like_llama_cpp(std::string_view bytes, std::vector<Token>& out) const;

  std::vector<std::string> tokens_;
  std::vector<TokenType> types_;
  std::vector<std::string> bytes_;  // each token's decoded bytes (T6)
  std::unordered_map<std::string, Token> index_;  // text -> id
  std::unordered_map<uint64_t, Merge> merges_;  // (left << 32 | right) -> rank, result
  Token byte_token_[256];                       // -1: no token for this byte
  std::string byte_chars_[256];                 // byte_level_char(b) (T2)
  std::optional<Token> bos_, eos_;
  PreTokenizer pre_ = PreTokenizer::kSmolLM;
  std::shared_ptr<const PreTokenizerSplitter> pre_split_;  // compiled PCRE2 patterns (T3, T9)
};

}  // namespace akv::readers
