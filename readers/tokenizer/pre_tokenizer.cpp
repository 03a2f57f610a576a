#include "readers/tokenizer/pre_tokenizer.hpp"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <stdexcept>
#include <string>

namespace akv::model {

size_t utf8_sequence_length(std::string_view text, size_t i) {
  const auto at = [&](size_t k) { return static_cast<uint8_t>(text[k]); };
  const size_t left = text.size() - i;
  const uint8_t b = at(i);
  if (b < 0x80) return 1;
  size_t n = 0;
  uint8_t lo = 0x80, hi = 0xBF;  // the range of the second byte
  if (b >= 0xC2 && b <= 0xDF) n = 2;
  else if (b == 0xE0) n = 3, lo = 0xA0;
  else if (b >= 0xE1 && b <= 0xEC) n = 3;
  else if (b == 0xED) n = 3, hi = 0x9F;  // no surrogates
  else if (b >= 0xEE && b <= 0xEF) n = 3;
  else if (b == 0xF0) n = 4, lo = 0x90;
  else if (b >= 0xF1 && b <= 0xF3) n = 4;
  else if (b == 0xF4) n = 4, hi = 0x8F;  // at most U+10FFFF
  else return 0;
  if (left < n) return 0;
  if (at(i + 1) < lo || at(i + 1) > hi) return 0;
  for (size_t k = 2; k < n; ++k)
    if (at(i + k) < 0x80 || at(i + k) > 0xBF) return 0;
  return n;
}

namespace {

// A compiled PCRE2 pattern (UTF + UCP), JIT-compiled where the library supports it.
class Regex {
 public:
  explicit Regex(const char* pattern) {
    int err = 0;
    PCRE2_SIZE off = 0;
    code_ = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern), PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP, &err,
                          &off, nullptr);
    if (!code_) throw std::logic_error(std::string("akv: PCRE2 cannot compile the pre-tokenizer pattern ") + pattern);
    pcre2_jit_compile(code_, PCRE2_JIT_COMPLETE);  // the interpreter gives the same matches when JIT is absent
  }
  ~Regex() { pcre2_code_free(code_); }
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  // Splits `text` by the pattern, Hugging Face's "Isolated" behaviour: every match is a piece,
  // and so is every non-empty stretch between matches.
  void isolate(std::string_view text, std::vector<std::string_view>& out) const {
    pcre2_match_data* md = pcre2_match_data_create_from_pattern(code_, nullptr);
    if (!md) throw std::bad_alloc();
    const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
    size_t pos = 0, last = 0;
    while (pos < text.size()) {
      const int rc = pcre2_match(code_, subject, text.size(), pos, PCRE2_NO_UTF_CHECK, md, nullptr);
      if (rc == PCRE2_ERROR_NOMATCH) break;
      if (rc < 0) {
        pcre2_match_data_free(md);
        throw std::runtime_error("akv: PCRE2 match failed (" + std::to_string(rc) + ") in the pre-tokenizer");
      }
      const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
      size_t b = ov[0], e = ov[1];
      if (e == b) {  // an empty match (none of akv's patterns has one): step one character
        pos = b + 1;
        while (pos < text.size() && (static_cast<uint8_t>(text[pos]) & 0xC0) == 0x80) ++pos;
        continue;
      }
      if (b > last) out.push_back(text.substr(last, b - last));
      out.push_back(text.substr(b, e - b));
      last = pos = e;
    }
    if (last < text.size()) out.push_back(text.substr(last));
    pcre2_match_data_free(md);
  }

 private:
  pcre2_code* code_ = nullptr;
};

}  // namespace

struct SmolLMPreTokenizer::Patterns {
  // Digits(individual_digits=true): every character of general category N is a piece (Rust's
  // char::is_numeric is Nd | Nl | No, PCRE2's \p{N}).
  Regex digits{R"(\p{N})"};
  // ByteLevel(use_regex=true): GPT-2's pattern, as Hugging Face tokenizers spells it.
  Regex gpt2{R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)"};
};

SmolLMPreTokenizer::SmolLMPreTokenizer() : p_(std::make_unique<Patterns>()) {}
SmolLMPreTokenizer::~SmolLMPreTokenizer() = default;

void SmolLMPreTokenizer::split(std::string_view text, std::vector<std::string_view>& out) const {
  std::vector<std::string_view> first;
  p_->digits.isolate(text, first);
  for (std::string_view piece : first) p_->gpt2.isolate(piece, out);
}

}  // namespace akv::model
