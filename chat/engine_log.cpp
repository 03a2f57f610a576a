#include "chat/engine_log.hpp"

#include <iostream>
#include <stdexcept>

namespace xgrammar {
// The two functions xgrammar's support/logging.h declares when built with
// XGRAMMAR_LOG_CUSTOMIZE=1 (scripts/fetch-xgrammar); declared here, as the header is not installed.
[[noreturn]] void LogFatalImpl(const std::string& file, int lineno, const std::string& message);
void LogMessageImpl(const std::string& file, int lineno, int level, const std::string& message);
}  // namespace xgrammar

namespace akv::chat::detail {

namespace {

thread_local std::vector<std::string>* t_warnings = nullptr;

constexpr int kWarning = 2;  // XGRAMMAR_LOG_LEVEL_WARNING

// What xgrammar's fatal errors throw: the message alone (no time, no source line).
class EngineFatal : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// One line of valid UTF-8: control bytes become spaces, a byte that starts no valid UTF-8
// sequence '?' (an error text quotes the schema or pattern, maybe cut inside a character).
std::string one_line(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size();) {
    const auto b = static_cast<unsigned char>(s[i]);
    if (b < 0x80) {
      out += b < 0x20 || b == 0x7f ? ' ' : static_cast<char>(b);
      ++i;
      continue;
    }
    const size_t n = b >= 0xc2 && b <= 0xdf ? 2 : b >= 0xe0 && b <= 0xef ? 3 : b >= 0xf0 && b <= 0xf4 ? 4 : 0;
    bool ok = n > 0 && i + n <= s.size();
    for (size_t k = 1; ok && k < n; ++k) ok = (static_cast<unsigned char>(s[i + k]) & 0xc0) == 0x80;
    if (ok && n == 3) {  // no overlong forms, no surrogates
      const auto c1 = static_cast<unsigned char>(s[i + 1]);
      ok = !(b == 0xe0 && c1 < 0xa0) && !(b == 0xed && c1 >= 0xa0);
    }
    if (ok && n == 4) {
      const auto c1 = static_cast<unsigned char>(s[i + 1]);
      ok = !(b == 0xf0 && c1 < 0x90) && !(b == 0xf4 && c1 >= 0x90);
    }
    if (ok) {
      out.append(s, i, n);
      i += n;
    } else {
      out += '?';
      ++i;
    }
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

}  // namespace

EngineLog::EngineLog() : previous_(t_warnings) { t_warnings = &warnings_; }
EngineLog::~EngineLog() { t_warnings = previous_; }

std::string engine_message(const std::exception& e) {
  std::string m = e.what();
  static const std::string check = "Check failed: (";
  if (m.rfind(check, 0) == 0) {
    const size_t end = m.find(") is false: ");
    if (end != std::string::npos) m = m.substr(end + 12);
  }
  return one_line(m);
}

}  // namespace akv::chat::detail

namespace xgrammar {

void LogFatalImpl(const std::string&, int, const std::string& message) { throw akv::chat::detail::EngineFatal(message); }

void LogMessageImpl(const std::string&, int, int level, const std::string& message) {
  using akv::chat::detail::t_warnings;
  if (level == akv::chat::detail::kWarning && t_warnings) {
    t_warnings->push_back(akv::chat::detail::one_line(message));
    return;
  }
  std::cerr << "akv: xgrammar: " << (level == akv::chat::detail::kWarning ? "warning: " : "") << message << '\n';
}

}  // namespace xgrammar
