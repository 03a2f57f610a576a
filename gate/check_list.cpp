#include "gate/check_list.hpp"

#include <fmt/format.h>

#include <utility>
#include <vector>

#include "gate/gate.hpp"

namespace akv::gate {

namespace {
const std::vector<std::pair<int, const char*>>& exit_codes() {
  static const std::vector<std::pair<int, const char*>> codes{
      {0, "every check that applies passed, every provided op was checked by a passing property and an end-to-end check passed"},
      {1, "a check failed, or nothing meaningful was checked (a skipped check, an op no property checked, 0 cases)"},
      {2, "bad input or a bad library (a missing file, no akv_get_kernels, an ABI mismatch, a bad option), one line"}};
  return codes;
}
}  // namespace

std::string check_list_text() {
  size_t w = 0;
  for (const std::string& id : check_ids()) w = std::max(w, id.size());
  std::string s;
  for (const std::string& id : check_ids()) {
    const Check c = describe_check(id);
    s += fmt::format("{:<{}}  {:<11}  {}\n", c.property, w, c.kind, c.summary);
  }
  return s;
}

std::string check_list_markdown() {
  std::string s = "| Check | Kind | What it asserts |\n|---|---|---|\n";
  for (const std::string& id : check_ids()) {
    const Check c = describe_check(id);
    s += fmt::format("| `{}` | {} | {} |\n", c.property, c.kind, c.summary);
  }
  s += "\n| Exit | Meaning |\n|---|---|\n";
  for (const auto& [code, what] : exit_codes()) s += fmt::format("| {} | {} |\n", code, what);
  return s;
}

std::string exit_codes_text() {
  std::string s;
  for (const auto& [code, what] : exit_codes()) s += fmt::format("{} {}\n", code, what);
  return s;
}

}  // namespace akv::gate
