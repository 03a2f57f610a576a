#include "readers/tokenizer/bpe_tokenizer.hpp"

#include <limits>
#include <queue>

#include "reference/error.hpp"

namespace akv::readers {

namespace {

[[noreturn]] void bad(const std::string& source, const std::string& field, const std::string& what) {
  throw Error(ErrorCode::kBadModel, source + ": " + field + ": " + what);
}

// The code point GPT-2's byte-level alphabet gives byte b (T2).
uint32_t byte_code_point(uint8_t b) {
  const auto printable = [](unsigned c) { return (c >= 0x21 && c <= 0x7E) || (c >= 0xA1 && c <= 0xAC) || c >= 0xAE; };
  if (printable(b)) return b;
  uint32_t n = 0;  // the rank of b among the non-printable bytes
  for (unsigned c = 0; c < b; ++c) n += !printable(c);
  return 256 + n;
}

void append_utf8(std::string& s, uint32_t cp) {
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else if (cp < 0x800) {
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    s += static_cast<char>(0xE0 | (cp >> 12));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    s += static_cast<char>(0xF0 | (cp >> 18));
    s += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// The code point of the valid UTF-8 sequence of n bytes at p.
uint32_t decode_utf8(const char* p, size_t n) {
  const auto u = [&](size_t k) { return static_cast<uint32_t>(static_cast<uint8_t>(p[k])); };
  if (n == 1) return u(0);
  if (n == 2) return ((u(0) & 0x1F) << 6) | (u(1) & 0x3F);
  if (n == 3) return ((u(0) & 0x0F) << 12) | ((u(1) & 0x3F) << 6) | (u(2) & 0x3F);
  return ((u(0) & 0x07) << 18) | ((u(1) & 0x3F) << 12) | ((u(2) & 0x3F) << 6) | (u(3) & 0x3F);
}

// Token text -> the bytes it stands for (T6): each character of the byte-level alphabet is its
// byte; any other character (special tokens written in plain text) is its own UTF-8.
std::string token_bytes(const std::string& text, const int16_t (&byte_of)[324]) {
  std::string out;
  for (size_t i = 0; i < text.size();) {
    const size_t n = utf8_sequence_length(text, i);
    const uint32_t cp = decode_utf8(text.data() + i, n);
    if (cp < 324 && byte_of[cp] >= 0) out += static_cast<char>(byte_of[cp]);
    else out.append(text, i, n);
    i += n;
  }
  return out;
}

std::string quoted(std::string_view s) {
  std::string out = "'";
  for (char c : s.substr(0, 60)) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7F) {
      static const char* hex = "0123456789abcdef";
      out += "\\x";
      out += hex[u >> 4];
      out += hex[u & 15];
    } else {
      out += c;
    }
  }
  return out + (s.size() > 60 ? "...'" : "'");
}

}  // namespace

std::string byte_level_char(uint8_t b) {
  std::string s;
  append_utf8(s, byte_code_point(b));
  return s;
}

TokenType checked_token(const std::string& source, size_t i, const std::string& text, int32_t type) {
  const std::string field = "tokens[" + std::to_string(i) + "]";
  if (text.empty()) bad(source, field, "an empty token");
  for (size_t k = 0; k < text.size();) {
    const size_t n = utf8_sequence_length(text, k);
    if (n == 0) bad(source, field, "not valid UTF-8 at byte " + std::to_string(k));
    k += n;
  }
  if (type < 0 || type > 6) bad(source, "token_type[" + std::to_string(i) + "]", std::to_string(type) + " is not a token type (0..6)");
  return static_cast<TokenType>(type);
}

BpeTokenizer::BpeTokenizer(std::vector<std::string> tokens, const std::vector<std::string>& merges,
                           std::vector<int32_t> types, std::string_view pre, std::optional<Token> bos,
                           std::optional<Token> eos, const std::string& source)
    : tokens_(std::move(tokens)), bos_(bos), eos_(eos) {
  const std::optional<PreTokenizer> kind = find_pre_tokenizer(pre);
  if (!kind)
    bad(source, "pre-tokenizer", quoted(pre) + " is not supported (akv knows: " + pre_tokenizer_names() + ")");
  pre_ = *kind;
  if (tokens_.empty()) bad(source, "tokens", "the vocabulary is empty");
  if (tokens_.size() > static_cast<size_t>(std::numeric_limits<Token>::max()))
    bad(source, "tokens", std::to_string(tokens_.size()) + " tokens, more than 2^31 - 1");
  if (!types.empty() && types.size() != tokens_.size())
    bad(source, "token_type", std::to_string(types.size()) + " types for " + std::to_string(tokens_.size()) + " tokens");

  int16_t byte_of[324];
  for (auto& v : byte_of) v = -1;
  for (int b = 0; b < 256; ++b) byte_of[byte_code_point(static_cast<uint8_t>(b))] = static_cast<int16_t>(b);

  index_.reserve(tokens_.size());
  types_.reserve(tokens_.size());
  bytes_.reserve(tokens_.size());
  for (size_t i = 0; i < tokens_.size(); ++i) {
    const std::string& t = tokens_[i];
    types_.push_back(checked_token(source, i, t, types.empty() ? 1 : types[i]));
    const auto [it, fresh] = index_.emplace(t, static_cast<Token>(i));
    if (!fresh) bad(source, "tokens[" + std::to_string(i) + "]", quoted(t) + " repeats tokens[" + std::to_string(it->second) + "]");
    bytes_.push_back(is_special(static_cast<Token>(i)) ? t : token_bytes(t, byte_of));
  }
  for (int b = 0; b < 256; ++b) {
    byte_chars_[b] = byte_level_char(static_cast<uint8_t>(b));
    const auto it = index_.find(byte_chars_[b]);
    byte_token_[b] = it == index_.end() ? -1 : it->second;
  }

  if (merges.empty()) bad(source, "merges", "no merges (a byte-level BPE vocabulary needs them)");
  merges_.reserve(merges.size());
  for (size_t r = 0; r < merges.size(); ++r) {
    const std::string& m = merges[r];
    const std::string field = "merges[" + std::to_string(r) + "]";
    const size_t sp = m.find(' ');
    if (sp == std::string::npos || sp == 0 || sp + 1 == m.size() || m.find(' ', sp + 1) != std::string::npos)
      bad(source, field, quoted(m) + " is not two tokens separated by one space");
    const std::string left = m.substr(0, sp), right = m.substr(sp + 1);
    const auto l = index_.find(left), rr = index_.find(right), res = index_.find(left + right);
    if (l == index_.end()) bad(source, field, "token " + quoted(left) + " is not in the vocabulary");
    if (rr == index_.end()) bad(source, field, "token " + quoted(right) + " is not in the vocabulary");
    if (res == index_.end()) bad(source, field, "the merged token " + quoted(left + right) + " is not in the vocabulary");
    const uint64_t key = (static_cast<uint64_t>(l->second) << 32) | static_cast<uint32_t>(rr->second);
    if (!merges_.emplace(key, Merge{static_cast<int32_t>(r), res->second}).second)
      bad(source, field, quoted(m) + " repeats an earlier merge");
  }
  for (const auto& [name, id] : {std::pair<const char*, std::optional<Token>>{"bos", bos_}, {"eos", eos_}})
    if (id && (*id < 0 || *id >= vocab_size()))
      bad(source, std::string(name) + "_token_id", std::to_string(*id) + " is outside the vocabulary [0, " +
                                                       std::to_string(vocab_size()) + ")");
  pre_split_ = std::make_shared<const PreTokenizerSplitter>(pre_);
}

std::optional<Token> BpeTokenizer::find(std::string_view text) const {
  const auto it = index_.find(std::string(text));
  if (it == index_.end()) return std::nullopt;
  return it->second;
}

std::optional<Token> BpeTokenizer::byte_token(uint8_t b) const {
  if (byte_token_[b] < 0) return std::nullopt;
  return byte_token_[b];
}

// Merges one piece (T4): its bytes' tokens (bytes without one dropped), then repeatedly the
// adjacent pair of lowest merge rank, the leftmost among equals, until no pair has a merge.
// A heap of candidate pairs, checked when popped, keeps this O(n log n) in the piece's length.
void BpeTokenizer::bpe(std::string_view piece, std::vector<Token>& out) const {
  struct Sym {
    Token id;
    int prev, next;
  };
  std::vector<Sym> s;
  s.reserve(piece.size());
  for (char c : piece) {
    const Token id = byte_token_[static_cast<uint8_t>(c)];
    if (id < 0) continue;
    const int n = static_cast<int>(s.size());
    s.push_back({id, n - 1, -1});
    if (n > 0) s[n - 1].next = n;
  }
  if (s.empty()) return;
  struct Cand {
    int32_t rank;
    int left;
    Token l, r;
    bool operator>(const Cand& o) const { return rank != o.rank ? rank > o.rank : left > o.left; }
  };
  std::priority_queue<Cand, std::vector<Cand>, std::greater<Cand>> heap;
  const auto push = [&](int i) {
    const int j = s[i].next;
    if (j < 0) return;
    const auto it = merges_.find((static_cast<uint64_t>(s[i].id) << 32) | static_cast<uint32_t>(s[j].id));
    if (it != merges_.end()) heap.push({it->second.rank, i, s[i].id, s[j].id});
  };
  for (int i = 0; i + 1 < static_cast<int>(s.size()); ++i) push(i);
  while (!heap.empty()) {
    const Cand c = heap.top();
    heap.pop();
    Sym& a = s[c.left];
    if (a.id != c.l || a.next < 0 || s[a.next].id != c.r) continue;  // stale: a neighbour changed
    const int j = a.next;
    a.id = merges_.at((static_cast<uint64_t>(c.l) << 32) | static_cast<uint32_t>(c.r)).result;
    a.next = s[j].next;
    if (a.next >= 0) s[a.next].prev = c.left;
    s[j].id = -1;  // dead
    if (a.prev >= 0) push(a.prev);
    push(c.left);
  }
  for (int i = 0; i >= 0; i = s[i].next) out.push_back(s[i].id);
}

void BpeTokenizer::encode_valid(std::string_view text, std::vector<Token>& out) const {
  std::vector<std::string_view> pieces;
  pre_split_->split(text, pieces);
  for (std::string_view p : pieces) bpe(p, out);
}

// llama.cpp's reading (T10): the whole input read as its decoder does, pre-tokenized as one
// text (T9), each piece's bytes (a surrogate's own three) merged, or under llama-bpe a piece
// that is a normal token as a whole taken as that token (llama.cpp's ignore_merges).
void BpeTokenizer::encode_like_llama_cpp(std::string_view bytes, std::vector<Token>& out) const {
  const LlamaCppText r = read_like_llama_cpp(bytes);
  std::vector<std::string_view> pieces;
  pre_split_->split(r.text, pieces);
  auto sur = r.surrogates.begin();
  std::string piece_bytes, level;
  for (std::string_view p : pieces) {
    const size_t begin = static_cast<size_t>(p.data() - r.text.data()), end = begin + p.size();
    std::string_view piece = p;
    if (sur != r.surrogates.end() && sur->first < end) {
      piece_bytes.assign(p);
      for (; sur != r.surrogates.end() && sur->first < end; ++sur) piece_bytes.replace(sur->first - begin, 3, sur->second);
      piece = piece_bytes;
    }
    if (pre_ == PreTokenizer::kLlama3) {
      level.clear();
      for (char c : piece) level += byte_chars_[static_cast<uint8_t>(c)];
      const auto it = index_.find(level);
      if (it != index_.end() && !is_special(it->second)) {
        out.push_back(it->second);
        continue;
      }
    }
    bpe(piece, out);
  }
}

std::vector<Token> BpeTokenizer::encode(std::string_view text) const {
  std::vector<Token> out;
  if (reads_like_llama_cpp(pre_)) {
    encode_like_llama_cpp(text, out);
    return out;
  }
  split_utf8(text, [&](std::string_view run, bool valid) {
    if (valid) {
      encode_valid(run, out);
    } else if (byte_token_[static_cast<uint8_t>(run[0])] >= 0) {
      out.push_back(byte_token_[static_cast<uint8_t>(run[0])]);
    }
  });
  return out;
}

std::string BpeTokenizer::decode(const std::vector<Token>& ids) const {
  std::string out;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= vocab_size())
      throw Error(ErrorCode::kInvalidToken, "ids[" + std::to_string(i) + "]: token id " + std::to_string(ids[i]) +
                                                " outside the vocabulary [0, " + std::to_string(vocab_size()) + ")");
    out += bytes_[ids[i]];
  }
  return out;
}

}  // namespace akv::readers
