// Every spec clause is named by a test, and every test names a clause that exists
// (spec/README.md).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "text_file.hpp"

namespace fs = std::filesystem;

namespace {

using akv::test::read_text;

struct Clause {
  std::string file;
  bool unchecked;
};

std::map<std::string, Clause> clauses() {
  std::map<std::string, Clause> out;
  const std::regex head(R"(^#{1,6} \[([A-Z]{1,3}[0-9]+)\](.*)$)");
  for (const auto& e : fs::directory_iterator(fs::path(AKV_SOURCE_DIR) / "spec")) {
    if (e.path().extension() != ".md") continue;
    std::stringstream s(read_text(e.path()));
    std::string line;
    while (std::getline(s, line)) {
      std::smatch m;
      if (std::regex_match(line, m, head)) {
        EXPECT_FALSE(out.count(m[1])) << "clause " << m[1] << " defined twice";
        out[m[1]] = {e.path().filename().string(), m[2].str().find("(unchecked") != std::string::npos};
      }
    }
  }
  return out;
}

// Clause ids named by tests: a suite or property name "<ID>_..." in any source under tests/.
std::set<std::string> named_by_tests() {
  std::set<std::string> out;
  const std::regex name(R"((?:TEST|TEST_P|TYPED_TEST|TYPED_TEST_P|RC_GTEST_PROP|RC_GTEST_FIXTURE_PROP|TYPED_TEST_SUITE|INSTANTIATE_TEST_SUITE_P|using)\s*\(?\s*(?:[A-Za-z0-9_]+\s*,\s*)?([A-Z]{1,3}[0-9]+)_)");
  for (const auto& e : fs::recursive_directory_iterator(fs::path(AKV_SOURCE_DIR) / "tests")) {
    const auto ext = e.path().extension();
    if (ext != ".cpp" && ext != ".hpp" && ext != ".cu") continue;
    const std::string text = read_text(e.path());
    for (std::sregex_iterator it(text.begin(), text.end(), name), end; it != end; ++it) out.insert((*it)[1]);
  }
  return out;
}

}  // namespace

TEST(Spec_Coverage, EveryClauseIsCheckedOrMarked) {
  const auto cs = clauses();
  ASSERT_GE(cs.size(), 20u) << "spec/ has too few clauses: is AKV_SOURCE_DIR right?";
  const auto named = named_by_tests();
  for (const auto& [id, c] : cs) {
    if (c.unchecked) continue;
    EXPECT_TRUE(named.count(id)) << "clause [" << id << "] in spec/" << c.file
                                 << " is named by no test; add one or mark it (unchecked)";
  }
}

TEST(Spec_Coverage, EveryTestNamesAClauseThatExists) {
  const auto cs = clauses();
  for (const auto& id : named_by_tests())
    EXPECT_TRUE(cs.count(id)) << "a test is named after clause [" << id << "], which no spec file defines";
}
