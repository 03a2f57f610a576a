#include "readers/tokenizer/spm_tokenizer.hpp"

#include <cmath>
#include <limits>
#include <queue>

#include "reference/error.hpp"
#include "reference/strict.hpp"

namespace akv::readers {

namespace {

constexpr std::string_view kSpace = "\xE2\x96\x81";  // U+2581, SentencePiece's space

[[noreturn]] void bad(const std::string& source, const std::string& field, const std::string& what) {
  throw Error(ErrorCode::kBadModel, source + ": " + field + ": " + what);
}

std::string byte_token_text(uint8_t b) {
  static const char* hex = "0123456789ABCDEF";
  return std::string("<0x") + hex[b >> 4] + hex[b & 15] + ">";
}

// The byte a `<0xXX>` text stands for (upper-case hex, as llama.cpp writes it), or -1.
int parse_byte_token(std::string_view t) {
  const auto digit = [](char c) { return c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1; };
  if (t.size() != 6 || t.substr(0, 3) != "<0x" || t[5] != '>') return -1;
  const int hi = digit(t[3]), lo = digit(t[4]);
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

// The symbol length llama.cpp gives a lead byte (unicode_len_utf8): by its top four bits only,
// so invalid UTF-8 is cut the same way and never rejected.
size_t lead_length(uint8_t b) { return b < 0xC0 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4; }

}  // namespace

SpmTokenizer::SpmTokenizer(std::vector<std::string> tokens, std::vector<float> scores, std::vector<int32_t> types,
                           Options opt, const std::string& source)
    : tokens_(std::move(tokens)), scores_(std::move(scores)), opt_(opt) {
  if (tokens_.empty()) bad(source, "tokens", "the vocabulary is empty");
  if (tokens_.size() > static_cast<size_t>(std::numeric_limits<Token>::max()))
    bad(source, "tokens", std::to_string(tokens_.size()) + " tokens, more than 2^31 - 1");
  const std::string n = std::to_string(tokens_.size());
  if (scores_.empty()) scores_.assign(tokens_.size(), 0.0f);
  if (scores_.size() != tokens_.size()) bad(source, "scores", std::to_string(scores_.size()) + " scores for " + n + " tokens");
  if (!types.empty() && types.size() != tokens_.size())
    bad(source, "token_type", std::to_string(types.size()) + " types for " + n + " tokens");

  std::unordered_map<std::string_view, Token> all;  // every token, for repeats and byte fallback
  all.reserve(tokens_.size());
  types_.reserve(tokens_.size());
  token_byte_.assign(tokens_.size(), -1);
  for (size_t i = 0; i < tokens_.size(); ++i) {
    const std::string& t = tokens_[i];
    const std::string field = "tokens[" + std::to_string(i) + "]";
    const TokenType type = checked_token(source, i, t, types.empty() ? 1 : types[i]);
    types_.push_back(type);
    const auto [it, fresh] = all.emplace(t, static_cast<Token>(i));
    if (!fresh) bad(source, field, "'" + printable(t, 60) + "' repeats tokens[" + std::to_string(it->second) + "]");
    if (std::isnan(scores_[i])) bad(source, "scores[" + std::to_string(i) + "]", "NaN is not a score");
    if (type == TokenType::kByte) {
      token_byte_[i] = static_cast<int16_t>(parse_byte_token(t));
      if (token_byte_[i] < 0) bad(source, field, "'" + printable(t, 60) + "' is a byte token (type 6) but not <0xXX>");
    }
    // Text never becomes a special token (T6): control, user-defined and unknown tokens are
    // left out of the merge and lookup index.
    if (type != TokenType::kControl && type != TokenType::kUserDefined && type != TokenType::kUnknown)
      index_.emplace(t, static_cast<Token>(i));
  }
  for (int b = 0; b < 256; ++b) {
    auto it = all.find(byte_token_text(static_cast<uint8_t>(b)));
    if (it == all.end() && b < 0x80) it = all.find(std::string(1, static_cast<char>(b)));
    if (it == all.end())
      bad(source, "tokens", "no fallback token for byte 0x" + byte_token_text(static_cast<uint8_t>(b)).substr(3, 2) +
                                " (neither " + byte_token_text(static_cast<uint8_t>(b)) + " nor the byte itself)");
    byte_token_[b] = it->second;
  }
  for (const auto& [name, id] : {std::pair<const char*, std::optional<Token>>{"bos", opt_.bos}, {"eos", opt_.eos}})
    if (id && (*id < 0 || *id >= vocab_size()))
      bad(source, std::string(name) + "_token_id",
          std::to_string(*id) + " is outside the vocabulary [0, " + n + ")");
  if (opt_.add_bos && !opt_.bos) bad(source, "add_bos_token", "true, but there is no bos token");
}

std::optional<Token> SpmTokenizer::find(std::string_view text) const {
  const auto it = index_.find(text);
  if (it == index_.end()) return std::nullopt;
  return it->second;
}

// T12: symbols by lead byte, then the best adjacent pair merged until none is a token. A heap of
// candidate pairs, each checked when popped (a neighbour may have changed since), keeps a text
// of n bytes at O(n log n).
std::vector<Token> SpmTokenizer::encode(std::string_view text, bool with_bos) const {
  std::vector<Token> out;
  if (with_bos && opt_.add_bos) out.push_back(*opt_.bos);
  if (text.empty()) return out;  // llama.cpp: no fragment, so no space prefix either
  std::string s;
  s.reserve(text.size() + 3);
  if (opt_.add_space_prefix) s += kSpace;
  for (char c : text) {
    if (c == ' ') s += kSpace;
    else s += c;
  }

  struct Sym {
    size_t begin, len;  // len 0: merged into its left neighbour
    int prev, next;
  };
  std::vector<Sym> sym;
  for (size_t i = 0; i < s.size();) {
    const size_t len = std::min(lead_length(static_cast<uint8_t>(s[i])), s.size() - i);
    const int k = static_cast<int>(sym.size());
    sym.push_back({i, len, k - 1, i + len < s.size() ? k + 1 : -1});
    i += len;
  }
  struct Pair {
    float score;
    int left, right;
    size_t size;  // the bytes of both symbols when pushed: a change in either makes it stale
  };
  const auto worse = [](const Pair& a, const Pair& b) {  // the heap's top: highest score, then leftmost
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  };
  std::priority_queue<Pair, std::vector<Pair>, decltype(worse)> heap(worse);
  const auto consider = [&](int l, int r) {
    if (l < 0 || r < 0) return;
    const size_t size = sym[l].len + sym[r].len;
    const auto it = index_.find(std::string_view(s).substr(sym[l].begin, size));
    if (it != index_.end()) heap.push({scores_[it->second], l, r, size});
  };
  for (int i = 0; i + 1 < static_cast<int>(sym.size()); ++i) consider(i, i + 1);
  while (!heap.empty()) {
    const Pair p = heap.top();
    heap.pop();
    Sym& a = sym[p.left];
    Sym& b = sym[p.right];
    if (a.len == 0 || b.len == 0 || a.next != p.right || a.len + b.len != p.size) continue;
    a.len = p.size;
    b.len = 0;
    a.next = b.next;
    if (a.next >= 0) sym[a.next].prev = p.left;
    consider(a.prev, p.left);
    consider(p.left, a.next);
  }
  for (int i = 0; i >= 0; i = sym[i].next) {
    const std::string_view piece = std::string_view(s).substr(sym[i].begin, sym[i].len);
    const auto it = index_.find(piece);
    if (it != index_.end()) {
      out.push_back(it->second);
      continue;
    }
    for (char c : piece) out.push_back(byte_token_[static_cast<uint8_t>(c)]);
  }
  return out;
}

std::string SpmTokenizer::decode(const std::vector<Token>& ids) const {
  std::string out;
  for (size_t i = 0; i < ids.size(); ++i) {
    const Token id = ids[i];
    if (id < 0 || id >= vocab_size())
      throw Error(ErrorCode::kInvalidToken, "ids[" + std::to_string(i) + "]: token id " + std::to_string(id) +
                                                " outside the vocabulary [0, " + std::to_string(vocab_size()) + ")");
    if (token_byte_[id] >= 0) {
      out += static_cast<char>(token_byte_[id]);
      continue;
    }
    const std::string& t = tokens_[id];
    const TokenType ty = types_[id];
    if (ty == TokenType::kControl || ty == TokenType::kUserDefined || ty == TokenType::kUnknown) {
      out += t;
      continue;
    }
    for (size_t k = 0; k < t.size();) {
      if (t.compare(k, kSpace.size(), kSpace) == 0) {
        out += ' ';
        k += kSpace.size();
      } else {
        out += t[k++];
      }
    }
  }
  return out;
}

}  // namespace akv::readers
