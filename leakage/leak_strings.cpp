#include "leakage/leak_strings.hpp"

#include <algorithm>
#include <regex>
#include <set>

namespace akv {

std::vector<std::string> leak_candidates(const std::string& text) {
  static const std::regex re(
      R"((?:https?://|www\.)[^\s'"<>()\[\]{}\\]+)"                               // URLs
      R"(|[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+)"                  // e-mail
      R"(|\b[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.(?:com|org|net|io|co|ai|dev|info|biz|xyz)\b(?:/[^\s'"<>()\\]*)?)"  // domains
      R"(|\b[A-Z]{2}[0-9]{2}[A-Z0-9]{8,30}\b)"                                   // IBAN-like
      R"(|\b[0-9]{6,}\b)"                                                        // digit runs
      R"(|\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b)");                                  // snake_case
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (std::sregex_iterator it(text.begin(), text.end(), re), end; it != end; ++it) {
    std::string s = it->str();
    while (!s.empty() && std::string(".,;:!?'\"").find(s.back()) != std::string::npos) s.pop_back();
    if (s.size() >= 4 && seen.insert(s).second) out.push_back(s);
  }
  return out;
}

std::vector<std::string> leak_candidates(const Conversation& c, const std::vector<size_t>& indexes) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (size_t i : indexes) {
    if (i >= c.messages.size()) continue;
    const Message& m = c.messages[i];
    std::string text = m.content + "\n" + m.name + "\n" + m.refusal;
    for (const ToolCall& t : m.tool_calls) text += "\n" + t.name + "\n" + t.arguments;
    for (std::string& s : leak_candidates(text))
      if (seen.insert(s).second) out.push_back(std::move(s));
  }
  return out;
}

std::vector<std::string> found_in(const std::vector<std::string>& candidates, const std::string& text) {
  std::vector<std::string> out;
  for (const std::string& s : candidates)
    if (text.find(s) != std::string::npos) out.push_back(s);
  return out;
}

}  // namespace akv
