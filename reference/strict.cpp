#include "reference/strict.hpp"

#include <charconv>
#include <cstdlib>

#include "reference/error.hpp"

namespace akv {

std::optional<uint64_t> parse_decimal(std::string_view s, uint64_t lo, uint64_t hi) {
  if (s.empty()) return std::nullopt;
  for (char c : s)
    if (c < '0' || c > '9') return std::nullopt;
  uint64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v, 10);
  if (ec != std::errc() || end != s.data() + s.size() || v < lo || v > hi) return std::nullopt;
  return v;
}

std::optional<uint64_t> env_decimal(const char* name, uint64_t lo, uint64_t hi) {
  const char* env = std::getenv(name);
  if (!env) return std::nullopt;
  const auto v = parse_decimal(env, lo, hi);
  if (!v)
    throw Error(ErrorCode::kBadInput,
                "$" + std::string(name) + ": '" + printable(env) + "' is not a decimal integer in [" + std::to_string(lo) + ", " +
                    std::to_string(hi) + "]");
  return v;
}

std::optional<std::string> env_nonempty(const char* name) {
  const char* env = std::getenv(name);
  if (!env) return std::nullopt;
  if (!*env) throw Error(ErrorCode::kBadInput, "$" + std::string(name) + ": set but empty (unset it for the default)");
  return std::string(env);
}

std::string printable(std::string_view s, size_t max) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i == max) {
      out += "...";
      break;
    }
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f) out.push_back(static_cast<char>(c));
    else {
      static const char* hex = "0123456789abcdef";
      out += "\\x";
      out.push_back(hex[c >> 4]);
      out.push_back(hex[c & 15]);
    }
  }
  return out;
}

}  // namespace akv
