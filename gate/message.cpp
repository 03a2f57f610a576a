#include "gate/message.hpp"

#include <regex>

namespace akv::gate {

namespace {
// akv's source root, from this file's own path.
std::string source_root() {
  const std::string self = __FILE__, tail = "gate/message.cpp";
  return self.size() > tail.size() && self.compare(self.size() - tail.size(), tail.size(), tail) == 0
             ? self.substr(0, self.size() - tail.size())
             : std::string();
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  size_t b = 0;
  while (b < s.size() && (s[b] == '\n' || s[b] == ' ')) ++b;
  return s.substr(b);
}
}  // namespace

std::string lead_with_failure(const std::string& rc) {
  // RapidCheck's makeMessage: "FILE:LINE:\nMACRO(...)" then "\n\nEXTRA" (EXTRA "Expands to:\n..." for RC_ASSERT).
  static const std::regex at(R"(([^\s:]+\.(?:cpp|hpp|h|cc)):(\d+):\n(RC_[A-Z_]+\((.*)\))(?:\n\n|$))");
  std::smatch m;
  if (!std::regex_search(rc, m, at)) return rc;
  std::string file = m[1].str();
  if (const std::string root = source_root(); !root.empty() && file.rfind(root, 0) == 0) file = file.substr(root.size());
  const std::string macro = m[3].str(), expr = m[4].str();
  std::string extra = trim(m.suffix().str()), header = trim(m.prefix().str());
  std::string lead;
  if (extra.rfind("Expands to:", 0) == 0) {
    std::string expansion = trim(extra.substr(11));
    for (char& c : expansion)
      if (c == '\n') c = ' ';
    lead = "assertion failed: " + expr + " (" + expansion + ")";
  } else {
    lead = extra.empty() ? macro + " without a message" : extra;
  }
  std::string out = lead + "\n  at " + file + ":" + m[2].str() + " (" + macro + ")";
  if (!header.empty()) out += "\n  " + header;
  return out;
}

}  // namespace akv::gate
