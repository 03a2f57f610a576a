#include "readers/tokenizer/pre_tokenizer.hpp"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <stdexcept>
#include <string>

namespace akv::readers {

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

// llama.cpp's whitespace is Unicode's White_Space property: tab to carriage return, U+0085 and
// the separators (general category Z). PCRE2's UCP \s (and \p{Xsp}) also takes U+180E
// (MONGOLIAN VOWEL SEPARATOR, through \h), so the llama.cpp patterns below spell \s as
// [\t-\r\x{85}\p{Z}], each a single class, so that a long run needs no backtracking stack (T9).
#define AKV_WS R"([\t-\r\x{85}\p{Z}])"
#define AKV_NOT_WS R"([^\t-\r\x{85}\p{Z}])"
#define AKV_PUNCT R"([^\t-\r\x{85}\p{Z}\p{L}\p{N}])"
#define AKV_LLAMA_PATTERN(DIGITS)                                                                     \
  R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|)" DIGITS \
  "| ?" AKV_PUNCT R"(+[\r\n]*|)" AKV_WS R"(*[\r\n]+|)" AKV_WS "+(?!" AKV_NOT_WS ")|" AKV_WS "+"

// llama.cpp's LLAMA_VOCAB_PRE_TYPE_LLAMA3 and _QWEN2 patterns (src/llama-vocab.cpp), which
// differ in the digits alone: runs of 1-3 against single digits.
const char* const kLlama3Pattern = AKV_LLAMA_PATTERN(R"(\p{N}{1,3})");
const char* const kQwen2Pattern = AKV_LLAMA_PATTERN(R"(\p{N})");
#undef AKV_WS
#undef AKV_NOT_WS
#undef AKV_PUNCT

#undef AKV_LLAMA_PATTERN

struct PreTokenizerSplitter::Patterns {
  explicit Patterns(PreTokenizer kind)
      : first(kind == PreTokenizer::kSmolLM ? R"(\p{N})" : kind == PreTokenizer::kLlama3 ? kLlama3Pattern : kQwen2Pattern) {
    if (kind == PreTokenizer::kSmolLM) gpt2 = std::make_unique<Regex>(kGpt2Pattern);
  }
  // smollm: Digits(individual_digits=true), every character of general category N a piece
  // (Rust's char::is_numeric is Nd | Nl | No, PCRE2's \p{N}); llama-bpe, qwen2: the one pattern.
  Regex first;
  // smollm's ByteLevel(use_regex=true): GPT-2's pattern, as Hugging Face tokenizers spells it.
  static constexpr const char* kGpt2Pattern = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
  std::unique_ptr<Regex> gpt2;
};

std::optional<PreTokenizer> find_pre_tokenizer(std::string_view name) {
  if (name == "smollm") return PreTokenizer::kSmolLM;
  if (name == "llama-bpe") return PreTokenizer::kLlama3;
  if (name == "qwen2") return PreTokenizer::kQwen2;
  return std::nullopt;
}

const char* pre_tokenizer_names() { return "smollm, llama-bpe, qwen2"; }

PreTokenizerSplitter::PreTokenizerSplitter(PreTokenizer kind) : kind_(kind), p_(std::make_unique<Patterns>(kind)) {}
PreTokenizerSplitter::~PreTokenizerSplitter() = default;

void PreTokenizerSplitter::split(std::string_view text, std::vector<std::string_view>& out) const {
  if (!p_->gpt2) {
    p_->first.isolate(text, out);
    return;
  }
  std::vector<std::string_view> first;
  p_->first.isolate(text, first);
  for (std::string_view piece : first) p_->gpt2->isolate(piece, out);
}

LlamaCppText read_like_llama_cpp(std::string_view bytes) {
  LlamaCppText r;
  r.text.reserve(bytes.size());
  const auto at = [&](size_t k) { return static_cast<uint32_t>(static_cast<uint8_t>(bytes[k])); };
  const auto cont = [&](size_t k) { return k < bytes.size() && (at(k) & 0xC0) == 0x80; };
  static const char kReplacement[] = "\xEF\xBF\xBD";  // U+FFFD
  for (size_t i = 0; i < bytes.size();) {
    const uint32_t b = at(i);
    size_t n = 0;
    uint32_t cp = 0;
    if (b < 0x80) n = 1, cp = b;
    else if (b >= 0xC0 && b <= 0xDF && cont(i + 1)) n = 2, cp = ((b & 0x1F) << 6) | (at(i + 1) & 0x3F);
    else if (b >= 0xE0 && b <= 0xEF && cont(i + 1) && cont(i + 2))
      n = 3, cp = ((b & 0x0F) << 12) | ((at(i + 1) & 0x3F) << 6) | (at(i + 2) & 0x3F);
    else if (b >= 0xF0 && b <= 0xF7 && cont(i + 1) && cont(i + 2) && cont(i + 3))
      n = 4, cp = ((b & 0x07) << 18) | ((at(i + 1) & 0x3F) << 12) | ((at(i + 2) & 0x3F) << 6) | (at(i + 3) & 0x3F);
    if (n == 0 || cp > 0x10FFFF) {  // no sequence, or one llama.cpp cannot write back: U+FFFD per byte
      r.text += kReplacement;
      ++i;
      continue;
    }
    if (cp >= 0xD800 && cp <= 0xDFFF) {
      r.surrogates.emplace_back(r.text.size(), std::string{static_cast<char>(0xE0 | (cp >> 12)),
                                                           static_cast<char>(0x80 | ((cp >> 6) & 0x3F)),
                                                           static_cast<char>(0x80 | (cp & 0x3F))});
      r.text += kReplacement;
    } else if (cp < 0x80) {
      r.text += static_cast<char>(cp);
    } else if (cp < 0x800) {
      r.text += static_cast<char>(0xC0 | (cp >> 6));
      r.text += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      r.text += static_cast<char>(0xE0 | (cp >> 12));
      r.text += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      r.text += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      r.text += static_cast<char>(0xF0 | (cp >> 18));
      r.text += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      r.text += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      r.text += static_cast<char>(0x80 | (cp & 0x3F));
    }
    i += n;
  }
  return r;
}

std::string escape_invalid_utf8(std::string_view bytes) {
  std::string out;
  split_utf8(bytes, [&](std::string_view run, bool valid) {
    if (valid) {
      out += run;
    } else {
      static const char* hex = "0123456789ABCDEF";
      const auto b = static_cast<uint8_t>(run[0]);
      out += std::string("\\x") + hex[b >> 4] + hex[b & 15];
    }
  });
  return out;
}

}  // namespace akv::readers
