// Python's json.dumps and str.strip, as the Jinja chat templates use them through transformers'
// `tojson` and Jinja's `trim` (spec/tokenizer.md CT6).
#include <cctype>
#include <cstdint>
#include <nlohmann/json.hpp>

#include "readers/tokenizer/pre_tokenizer.hpp"
#include "chat/turn_templates.hpp"
#include "reference/error.hpp"

namespace akv::chat {

namespace {

using Ordered = nlohmann::ordered_json;

// Python escapes only '"', '\\' and U+0000-U+001F (ensure_ascii=False), \uXXXX in lower case.
void dump_string(std::string_view s, std::string& out) {
  out += '"';
  for (const char ch : s) {
    const auto b = static_cast<unsigned char>(ch);
    switch (ch) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (b < 0x20) {
          static const char* hex = "0123456789abcdef";
          out += "\\u00";
          out += hex[b >> 4];
          out += hex[b & 15];
        } else {
          out += ch;
        }
    }
  }
  out += '"';
}

// indent < 0: one line, separators ", " and ": "; indent >= 0: Python's indent=N, items on
// lines of their own, separators "," and ": ", empty containers as {} and [].
void dump(const Ordered& v, std::string& out, int indent = -1, int depth = 0) {
  const auto newline = [&](int d) {
    out += '\n';
    out.append(static_cast<size_t>(indent * d), ' ');
  };
  switch (v.type()) {
    case Ordered::value_t::object: {
      out += '{';
      bool first = true;
      for (const auto& [k, x] : v.items()) {
        if (!first) out += indent < 0 ? ", " : ",";
        first = false;
        if (indent >= 0) newline(depth + 1);
        dump_string(k, out);
        out += ": ";
        dump(x, out, indent, depth + 1);
      }
      if (indent >= 0 && !v.empty()) newline(depth);
      out += '}';
      return;
    }
    case Ordered::value_t::array: {
      out += '[';
      for (size_t i = 0; i < v.size(); ++i) {
        if (i) out += indent < 0 ? ", " : ",";
        if (indent >= 0) newline(depth + 1);
        dump(v[i], out, indent, depth + 1);
      }
      if (indent >= 0 && !v.empty()) newline(depth);
      out += ']';
      return;
    }
    case Ordered::value_t::string: dump_string(v.get_ref<const std::string&>(), out); return;
    // Integers and booleans print as Python prints them; a double as the shortest text that
    // reads back (Python's repr and nlohmann's dump agree: fixed for exponents -4..15, else
    // d.ddde+XX, and ".0" on integral values).
    default: out += v.dump(); return;
  }
}

// Throws when an integer literal outside strings does not fit 64 bits: nlohmann would read it
// as a double, Python keeps it exact, so the two texts would differ.
void refuse_wide_integers(std::string_view t) {
  bool in_string = false;
  for (size_t i = 0; i < t.size(); ++i) {
    const char ch = t[i];
    if (in_string) {
      if (ch == '\\') ++i;
      else if (ch == '"') in_string = false;
      continue;
    }
    if (ch == '"') { in_string = true; continue; }
    if (ch != '-' && (ch < '0' || ch > '9')) continue;
    size_t j = i;
    bool integral = true;
    while (j < t.size() && (std::isdigit(static_cast<unsigned char>(t[j])) || t[j] == '-' || t[j] == '+' ||
                            t[j] == '.' || t[j] == 'e' || t[j] == 'E')) {
      if (t[j] == '.' || t[j] == 'e' || t[j] == 'E') integral = false;
      ++j;
    }
    const std::string_view lit = t.substr(i, j - i);
    const std::string_view digits = lit.starts_with('-') ? lit.substr(1) : lit;
    // 19 digits may overflow int64; 20 fit uint64 only up to 18446744073709551615.
    const bool wide = integral && (digits.size() > 20 || (digits.size() >= 19 && [&] {
                                     const Ordered n = Ordered::parse(lit);
                                     return n.is_number_float();
                                   }()));
    if (wide)
      throw Error(ErrorCode::kBadInput, "the integer " + std::string(lit.substr(0, 40)) +
                                            " does not fit 64 bits (its Python text cannot be reproduced)");
    i = j - 1;
  }
}

// The code point at s[i] and its length (utf8_sequence_length, T5), or length 0 when s[i]
// starts no valid UTF-8 sequence.
std::pair<uint32_t, size_t> utf8_at(std::string_view s, size_t i) {
  const size_t n = readers::utf8_sequence_length(s, i);
  if (n == 0) return {0, 0};
  uint32_t cp = static_cast<unsigned char>(s[i]) & (n == 1 ? 0x7F : 0x7F >> n);
  for (size_t k = 1; k < n; ++k) cp = cp << 6 | (static_cast<unsigned char>(s[i + k]) & 0x3F);
  return {cp, n};
}

// str.isspace(): Unicode White_Space plus the bidi-class B/S/WS separators U+001C-U+001F.
bool python_space(uint32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F ||
         cp == 0x3000;
}

}  // namespace

std::string python_json_dumps(std::string_view json_text, int indent) {
  if (!Ordered::accept(json_text)) throw Error(ErrorCode::kBadInput, "not a JSON text");
  refuse_wide_integers(json_text);
  std::string out;
  dump(Ordered::parse(json_text), out, indent);
  return out;
}

std::string python_json_string(std::string_view s) {
  std::string out;
  dump_string(s, out);
  return out;
}

std::string python_strip(std::string_view s) {
  size_t begin = 0;
  while (begin < s.size()) {
    const auto [cp, n] = utf8_at(s, begin);
    if (n == 0 || !python_space(cp)) break;
    begin += n;
  }
  size_t end = s.size();
  while (end > begin) {
    // Step back over one UTF-8 character (at most 4 bytes) and test it.
    size_t start = end - 1;
    while (start > begin && end - start < 4 && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) --start;
    const auto [cp, n] = utf8_at(s, start);
    if (n != end - start || !python_space(cp)) break;
    end = start;
  }
  return std::string(s.substr(begin, end - begin));
}

}  // namespace akv::chat
