// Pre-tokenization: text -> the pieces BPE merges within (spec/tokenizer.md T3, T5). Unicode
// classes and the regex come from PCRE2 (UTF + UCP), not from tables of akv's own.
#pragma once
#include <memory>
#include <string_view>
#include <vector>

namespace akv::model {

/// The pre-tokenizers akv implements (T3). Only "smollm" today.
enum class PreTokenizer { kSmolLM };

/// Calls `run(bytes, valid)` for the maximal valid UTF-8 runs of `text` (valid = true) and for
/// each byte that starts no valid sequence (valid = false, one byte), in order (T5). Valid
/// means RFC 3629: shortest form, no surrogates, at most U+10FFFF: exactly what Python's strict
/// UTF-8 decoder accepts.
template <class F>
void split_utf8(std::string_view text, F&& run);

/// The length of the valid UTF-8 sequence starting at text[i], or 0 when none does (T5).
size_t utf8_sequence_length(std::string_view text, size_t i);

/// SmolLM2's pre-tokenizer (T3): Hugging Face's Sequence[Digits(individual_digits=true),
/// ByteLevel(add_prefix_space=false, use_regex=true)]. Thread-safe; the PCRE2 patterns are
/// compiled once in the constructor.
class SmolLMPreTokenizer {
 public:
  SmolLMPreTokenizer();
  ~SmolLMPreTokenizer();
  SmolLMPreTokenizer(const SmolLMPreTokenizer&) = delete;
  SmolLMPreTokenizer& operator=(const SmolLMPreTokenizer&) = delete;

  /// Appends the pieces of `text` (valid UTF-8, unchecked: split_utf8 first) to `out`, as views
  /// into `text`, in order; their concatenation is `text`. Never throws for valid UTF-8.
  void split(std::string_view text, std::vector<std::string_view>& out) const;

 private:
  struct Patterns;
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

}  // namespace akv::model
