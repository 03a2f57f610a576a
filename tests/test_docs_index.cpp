// The indexes a newcomer reads are complete (spec/input.md IN9, help and docs): docs/README.md
// links every guide in docs/ and every link in it resolves; scripts/README.md has one row per
// script and names no script that is gone; the README links both, docs/cli.md and spec/README.md.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "support.hpp"
#include "text_file.hpp"

namespace fs = std::filesystem;

namespace {

// The relative targets of a Markdown file's links `[text](target)`, without their #anchor.
std::vector<std::string> link_targets(const std::string& markdown) {
  std::vector<std::string> out;
  const std::regex link(R"(\]\(([^)#\s]+)(#[^)]*)?\))");
  for (std::sregex_iterator it(markdown.begin(), markdown.end(), link), end; it != end; ++it) {
    const std::string target = (*it)[1];
    if (target.find("://") == std::string::npos) out.push_back(target);
  }
  return out;
}

}  // namespace

TEST(IN9_DocsIndex, DocsReadmeListsEveryGuide) {
  const fs::path docs = fs::path(akv::test::source_dir()) / "docs";
  const std::string index = akv::test::read_text(docs / "README.md");
  ASSERT_FALSE(index.empty()) << "no docs/README.md";
  std::set<std::string> linked;
  for (const std::string& t : link_targets(index)) {
    EXPECT_TRUE(fs::exists(docs / t)) << "docs/README.md links " << t << ", which is not there";
    linked.insert(fs::path(t).lexically_normal().string());
  }
  size_t guides = 0;
  for (const auto& e : fs::directory_iterator(docs)) {
    const std::string name = e.path().filename().string(), ext = e.path().extension().string();
    if (!e.is_regular_file() || name == "README.md" || (ext != ".md" && ext != ".yml" && ext != ".yaml")) continue;
    ++guides;
    EXPECT_TRUE(linked.count(name)) << "docs/README.md does not list docs/" << name;
  }
  EXPECT_GE(guides, 20u) << "too few guides found in docs/: is AKV_SOURCE_DIR right?";
}

// Every file in scripts/ (scripts/lib/ included) has one row, `| \`scripts/NAME ...\` |`, in
// scripts/README.md, and every script a row names exists.
TEST(IN9_DocsIndex, ScriptsReadmeListsEveryScript) {
  const fs::path root(akv::test::source_dir());
  const std::string index = akv::test::read_text(root / "scripts" / "README.md");
  ASSERT_FALSE(index.empty()) << "no scripts/README.md";
  const std::regex row(R"(^\| `(scripts/[A-Za-z0-9_./-]+))");
  const std::regex named(R"(`(scripts/[A-Za-z0-9_./-]+))");
  std::map<std::string, int> rows;
  std::stringstream lines(index);
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (!std::regex_search(line, m, row)) continue;
    ++rows[m[1]];
    // Every script the row's first cell names (a row may show two forms of one script).
    const std::string cell = line.substr(1, line.find(" | ", 2) - 1);
    for (std::sregex_iterator it(cell.begin(), cell.end(), named), end; it != end; ++it)
      EXPECT_TRUE(fs::is_regular_file(root / (*it)[1].str())) << "scripts/README.md names " << (*it)[1] << ", which is not there";
  }
  size_t scripts = 0;
  for (const auto& e : fs::recursive_directory_iterator(root / "scripts")) {
    if (!e.is_regular_file() || e.path().filename() == "README.md") continue;
    ++scripts;
    const std::string rel = fs::relative(e.path(), root).string();
    EXPECT_EQ(rows[rel], 1) << "scripts/README.md has " << rows[rel] << " rows for " << rel << " (one wanted)";
  }
  EXPECT_GE(scripts, 20u) << "too few scripts found: is AKV_SOURCE_DIR right?";
}

// The README points a newcomer at the indexes: the guides, the spec, every command, every script.
TEST(IN9_DocsIndex, ReadmeLinksTheIndexes) {
  const fs::path root(akv::test::source_dir());
  const auto targets = link_targets(akv::test::read_text(root / "README.md"));
  const std::set<std::string> linked(targets.begin(), targets.end());
  for (const char* index : {"docs/README.md", "spec/README.md", "docs/cli.md", "scripts/README.md"}) {
    EXPECT_TRUE(linked.count(index)) << "README.md does not link " << index;
    EXPECT_TRUE(fs::exists(root / index)) << index << " is not there";
  }
}
