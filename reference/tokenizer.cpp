#include "reference/tokenizer.hpp"

namespace akv::tok {

void append_bytes(std::vector<Token>& out, std::string_view s) {
  for (unsigned char ch : s) out.push_back(static_cast<Token>(ch));
}

std::string render(const std::vector<Token>& tokens) {
  static const char* names[] = {"system", "user", "assistant", "tool", "end", "call", "args", "id", "result", "developer", "function", "name", "refusal", "input", "tools"};
  std::string s;
  for (Token t : tokens) {
    if (t >= 0 && t < 256) {
      s.push_back(static_cast<char>(t));
    } else if (t >= kSystem && t < kFirstReserved) {
      s += std::string("<|") + names[t - kSystem] + "|>";
    } else {
      s += "<|r" + std::to_string(t) + "|>";
    }
  }
  return s;
}

}  // namespace akv::tok
