// Pre-tokenization: text -> the pieces BPE merges within (spec/tokenizer.md T3, T5, T9, T10).
// Unicode classes and the regexes come from PCRE2 (UTF + UCP), not from tables of akv's own.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace akv::readers {

/// The pre-tokenizers akv implements, by their `tokenizer.ggml.pre` names: "smollm" (T3),
/// "llama-bpe" (Llama 3, T9) and "qwen2" (T9).
enum class PreTokenizer { kSmolLM, kLlama3, kQwen2 };

/// The pre-tokenizer `name` spells (exactly "smollm", "llama-bpe" or "qwen2"), or nullopt.
std::optional<PreTokenizer> find_pre_tokenizer(std::string_view name);
/// The names find_pre_tokenizer accepts, comma-separated, for error messages.
const char* pre_tokenizer_names();
/// Whether `p` reads bytes and merges as llama.cpp does (T9, T10: llama-bpe and qwen2), rather
/// than as Hugging Face does (T3-T5: smollm).
inline bool reads_like_llama_cpp(PreTokenizer p) { return p == PreTokenizer::kLlama3 || p == PreTokenizer::kQwen2; }

/// Text read as llama.cpp reads bytes (T10): `text` is valid UTF-8 holding one code point per
/// code point llama.cpp's decoder yields, and `surrogates` the byte offsets in `text` of the
/// U+FFFD characters that stand for a UTF-16 surrogate (3 bytes each, as its bytes are).
struct LlamaCppText {
  std::string text;
  std::vector<std::pair<size_t, std::string>> surrogates;  // (offset in text, the 3 bytes ED xx xx)
};

/// Reads `bytes` as llama.cpp 0.3.36's unicode_cpts_from_utf8 does (T10): a lead byte 0xC0-0xDF,
/// 0xE0-0xEF or 0xF0-0xF7 followed by 1, 2 or 3 bytes 0x80-0xBF is one code point, overlong forms included
/// (written in shortest form); a surrogate is kept (as U+FFFD in `text`, its bytes in
/// `surrogates`); a code point above U+10FFFF (llama.cpp aborts on it) and every byte that
/// starts no such sequence become U+FFFD, one per byte. Never throws.
LlamaCppText read_like_llama_cpp(std::string_view bytes);

/// Calls `run(bytes, valid)` for the maximal valid UTF-8 runs of `text` (valid = true) and for
/// each byte that starts no valid sequence (valid = false, one byte), in order (T5). Valid
/// means RFC 3629: shortest form, no surrogates, at most U+10FFFF: exactly what Python's strict
/// UTF-8 decoder accepts.
template <class F>
void split_utf8(std::string_view text, F&& run);

/// The length of the valid UTF-8 sequence starting at text[i], or 0 when none does (T5).
size_t utf8_sequence_length(std::string_view text, size_t i);

/// `bytes` as valid UTF-8 text: each byte that starts no valid sequence written as `\xNN`
/// (upper-case hex; spec/tokenizer.md CT4), so that it always fits in JSON.
std::string escape_invalid_utf8(std::string_view bytes);

/// A pre-tokenizer's splitting rules. smollm (T3): Hugging Face's Sequence[Digits(individual_digits=true),
/// ByteLevel(add_prefix_space=false, use_regex=true)]; llama-bpe and qwen2 (T9): llama.cpp's
/// one pattern for each. Thread-safe; the PCRE2 patterns are compiled once in the constructor.
class PreTokenizerSplitter {
 public:
  explicit PreTokenizerSplitter(PreTokenizer kind);
  ~PreTokenizerSplitter();
  PreTokenizerSplitter(const PreTokenizerSplitter&) = delete;
  PreTokenizerSplitter& operator=(const PreTokenizerSplitter&) = delete;
  PreTokenizer kind() const { return kind_; }

  /// Appends the pieces of `text` (valid UTF-8, unchecked: split_utf8 first) to `out`, as views
  /// into `text`, in order; their concatenation is `text`. Never throws for valid UTF-8.
  void split(std::string_view text, std::vector<std::string_view>& out) const;

 private:
  struct Patterns;
  PreTokenizer kind_;
  std::unique_ptr<Patterns> p_;
};

template <class F>
void split_utf8(std::string_view text, F&& run) {
  size_t start = 0, i = 0;
  while (i < text.size()) {
    const size_t n = utf8_sequence_length(text, i);
    if (n > 0) {
      i += n;
      continue;
    }
    if (i > start) run(text.substr(start, i - start), true);
    run(text.substr(i, 1), false);
    start = ++i;
  }
  if (i > start) run(text.substr(start, i - start), true);
}

}  // namespace akv::readers
