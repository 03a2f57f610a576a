// Every spec clause is named by a test, every test names a clause that exists, every clause
// id a code comment cites exists, spec/README.md's index lists each file's clauses, every
// Markdown file a comment or a link names is in the repository (spec/README.md), and every
// clause of theorems.md and bounds.md says whether Coq checked it, naming theorems proofs/
// declares (docs/proofs.md).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "source_comments.hpp"
#include "text_file.hpp"

namespace fs = std::filesystem;

namespace {

using akv::test::comment_lines;
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

// The source files whose comments are scanned, and whether each is C-like (// and /* */) or
// a script (#). Build trees are skipped.
std::vector<std::pair<fs::path, bool>> commented_sources() {
  std::vector<std::pair<fs::path, bool>> out;
  for (const char* dir : {"reference", "optimized", "verify", "gate", "leakage", "campaign", "bench", "cli", "readers", "chat", "serve", "tests", "fuzz", "scripts", "include", "plugins",
                          "examples", "cmake"}) {
    const fs::path root = fs::path(AKV_SOURCE_DIR) / dir;
    if (!fs::exists(root)) continue;
    for (const auto& e : fs::recursive_directory_iterator(root)) {
      if (!e.is_regular_file()) continue;
      const std::string ext = e.path().extension().string(), name = e.path().filename().string();
      const bool c_like = ext == ".cpp" || ext == ".hpp" || ext == ".cu" || ext == ".cuh" || ext == ".h" || ext == ".c";
      const bool script = ext == ".py" || ext == ".sh" || ext == ".cmake" || name == "CMakeLists.txt" ||
                          (ext.empty() && read_text(e.path()).rfind("#!", 0) == 0);
      if (c_like || script) out.emplace_back(e.path(), c_like);
    }
  }
  return out;
}

std::string where(const fs::path& p, int line) {
  return fs::relative(p, AKV_SOURCE_DIR).string() + ":" + std::to_string(line);
}

// Every Markdown file name in the repository (build trees and .git left out).
std::set<std::string> markdown_names() {
  std::set<std::string> out;
  const fs::path root(AKV_SOURCE_DIR);
  for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator(); ++it) {
    const std::string n = it->path().filename().string();
    if (it->is_directory() && (n == "build" || n == ".git")) it.disable_recursion_pending();
    else if (it->path().extension() == ".md") out.insert(n);
  }
  return out;
}

// Whether a Markdown file named in a comment of `from` is in the repository: a path whose first
// part is "." or ".." or a top-level entry must exist (from the file's folder or the root); a
// bare name must be some file's name; any other path (OUT/x.md) names an output, not a file here.
// A file outside the repository (the design notes beside it) is not shipped, so it does not count.
bool markdown_exists(const std::string& ref, const fs::path& from, const std::set<std::string>& names) {
  const fs::path root = fs::weakly_canonical(AKV_SOURCE_DIR);
  const size_t slash = ref.find('/');
  if (slash == std::string::npos) return names.count(ref) != 0;
  const std::string first = ref.substr(0, slash);
  if (first != "." && first != ".." && !fs::exists(root / first)) return true;
  for (const fs::path& p : {from.parent_path() / ref, root / ref}) {
    const fs::path c = fs::weakly_canonical(p);
    const auto rel = c.lexically_relative(root);
    if (fs::exists(c) && !rel.empty() && *rel.begin() != "..") return true;
  }
  return false;
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

// A clause id in a comment uses the spec's id syntax with one of the spec's prefixes (M, E,
// IN, CT, ...) and names a clause some spec file defines. Data types and a GPU whose names
// share that syntax (F32, I8, H200) are not clause ids.
TEST(Spec_Coverage, CommentsCiteOnlyClausesThatExist) {
  const auto cs = clauses();
  ASSERT_GE(cs.size(), 20u) << "spec/ has too few clauses: is AKV_SOURCE_DIR right?";
  std::set<std::string> prefixes;
  for (const auto& [id, c] : cs) prefixes.insert(id.substr(0, id.find_first_of("0123456789")));
  const std::set<std::string> not_clauses = {"F16", "F32", "F64", "I8", "I16", "I32", "I64", "H100", "H200"};
  const std::regex token(R"((^|[^A-Za-z0-9_])([A-Z]{1,3})([0-9]+)(?![A-Za-z0-9_]))");
  size_t cited = 0;
  for (const auto& [path, c_like] : commented_sources())
    for (const auto& cl : comment_lines(read_text(path), c_like))
      for (std::sregex_iterator it(cl.text.begin(), cl.text.end(), token), end; it != end; ++it) {
        const std::string id = (*it)[2].str() + (*it)[3].str();
        if (!prefixes.count((*it)[2].str()) || not_clauses.count(id)) continue;
        ++cited;
        EXPECT_TRUE(cs.count(id)) << where(path, cl.line) << ": a comment cites clause [" << id
                                  << "], which no spec file defines: point it at the right clause";
      }
  EXPECT_GE(cited, 200u) << "the scan found too few clause ids in comments: is the comment extraction broken?";
}

// Comments and Markdown links name only Markdown files that are in the repository (the design
// notes outside it are not shipped: a comment cites the spec clause instead).
TEST(Spec_Coverage, MarkdownFilesNamedExist) {
  const std::set<std::string> names = markdown_names();
  ASSERT_TRUE(names.count("README.md")) << "no README.md found: is AKV_SOURCE_DIR right?";
  const std::regex ref(R"([A-Za-z0-9_./-]*[A-Za-z0-9_]\.md\b)");
  size_t seen = 0;
  for (const auto& [path, c_like] : commented_sources())
    for (const auto& cl : comment_lines(read_text(path), c_like))
      for (std::sregex_iterator it(cl.text.begin(), cl.text.end(), ref), end; it != end; ++it) {
        ++seen;
        EXPECT_TRUE(markdown_exists(it->str(), path, names))
            << where(path, cl.line) << ": a comment names " << it->str() << ", which is not in the repository";
      }
  const std::regex link(R"(\]\(([^)#\s]+\.md)(#[^)]*)?\))");
  const fs::path root(AKV_SOURCE_DIR);
  for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator(); ++it) {
    const std::string n = it->path().filename().string();
    if (it->is_directory() && (n == "build" || n == ".git")) it.disable_recursion_pending();
    if (it->path().extension() != ".md") continue;
    std::stringstream s(read_text(it->path()));
    std::string line;
    for (int ln = 1; std::getline(s, line); ++ln)
      for (std::sregex_iterator m(line.begin(), line.end(), link), end; m != end; ++m) {
        const std::string target = (*m)[1].str();
        if (target.rfind("http", 0) == 0) continue;
        ++seen;
        EXPECT_TRUE(fs::exists(it->path().parent_path() / target))
            << where(it->path(), ln) << ": a link names " << target << ", which is not in the repository";
      }
  }
  EXPECT_GE(seen, 50u) << "the scan found too few Markdown references: is it broken?";
}

// spec/README.md's table gives each file's clause ids as ranges ("F1-F8, Q1-Q6") or "(maps)"
// for a file without clauses: they must be exactly the ids the file defines, and every file
// that defines clauses has a row.
TEST(Spec_Coverage, TheIndexListsEachFilesClauses) {
  std::map<std::string, std::set<std::string>> defined;
  for (const auto& [id, c] : clauses()) defined[c.file].insert(id);
  ASSERT_GE(defined.size(), 5u);
  const std::regex row(R"(^\| \[([A-Za-z0-9_-]+\.md)\]\([^)]*\) \| ([^|]*) \|)");
  const std::regex range(R"(^([A-Z]{1,3})([0-9]+)(?:-([A-Z]{1,3})([0-9]+))?$)");
  std::set<std::string> rows;
  std::stringstream s(read_text(fs::path(AKV_SOURCE_DIR) / "spec" / "README.md"));
  for (std::string line; std::getline(s, line);) {
    std::smatch m;
    if (!std::regex_search(line, m, row)) continue;
    const std::string file = m[1], ranges = m[2];
    rows.insert(file);
    std::set<std::string> listed;
    std::stringstream parts(ranges);
    for (std::string part; std::getline(parts, part, ',');) {
      part.erase(0, part.find_first_not_of(' '));
      part.erase(part.find_last_not_of(' ') + 1);
      if (part == "(maps)") continue;
      std::smatch r;
      ASSERT_TRUE(std::regex_match(part, r, range)) << "spec/README.md, " << file << ": '" << part << "' is not an id or a range of ids";
      const int lo = std::stoi(r[2]), hi = r[4].matched ? std::stoi(r[4]) : lo;
      EXPECT_TRUE(!r[3].matched || r[3] == r[1]) << file << ": " << part << " spans two prefixes";
      for (int i = lo; i <= hi; ++i) listed.insert(r[1].str() + std::to_string(i));
    }
    EXPECT_EQ(listed, defined[file]) << "spec/README.md lists other clauses for " << file << " than it defines";
  }
  for (const auto& [file, ids] : defined) EXPECT_TRUE(rows.count(file)) << "spec/README.md has no row for " << file;
}

namespace {

// The text of each clause of a spec file: from its heading to the next heading.
std::vector<std::pair<std::string, std::string>> clause_bodies(const std::string& file) {
  std::vector<std::pair<std::string, std::string>> out;
  const std::regex head(R"(^#{1,6} \[([A-Z]{1,3}[0-9]+)\].*$)"), other(R"(^#{1,6} .*$)");
  std::stringstream s(read_text(fs::path(AKV_SOURCE_DIR) / "spec" / file));
  std::string line;
  while (std::getline(s, line)) {
    std::smatch m;
    if (std::regex_match(line, m, head)) out.push_back({m[1], ""});
    else if (std::regex_match(line, other)) out.push_back({"", ""});
    else if (!out.empty()) out.back().second += line + "\n";
  }
  std::erase_if(out, [](const auto& c) { return c.first.empty(); });
  return out;
}

// The Theorem and Lemma names of proofs/*.v (comments dropped).
std::set<std::string> coq_theorems() {
  std::set<std::string> out;
  const std::regex decl(R"((?:^|\n)\s*(?:Theorem|Lemma)\s+([A-Za-z0-9_']+))");
  for (const auto& e : fs::directory_iterator(fs::path(AKV_SOURCE_DIR) / "proofs")) {
    if (e.path().extension() != ".v") continue;
    std::string text = read_text(e.path()), code;
    int depth = 0;
    for (size_t i = 0; i < text.size(); ++i) {
      if (text.compare(i, 2, "(*") == 0) ++depth, ++i;
      else if (depth && text.compare(i, 2, "*)") == 0) --depth, ++i;
      else if (!depth) code += text[i];
    }
    for (std::sregex_iterator it(code.begin(), code.end(), decl), end; it != end; ++it) out.insert((*it)[1]);
  }
  return out;
}

}  // namespace

// docs/proofs.md: each clause of the theorems and the bounds says whether a proof assistant
// checked it ("checked: Coq `Name`") or why it stays on paper ("paper only: ...").
TEST(Spec_Coverage, EveryTheoremAndBoundClauseSaysCheckedOrPaperOnly) {
  size_t checked = 0, paper = 0;
  for (const char* file : {"theorems.md", "bounds.md"}) {
    const auto cs = clause_bodies(file);
    ASSERT_GE(cs.size(), 5u) << "spec/" << file << ": too few clauses found";
    for (const auto& [id, body] : cs) {
      const bool c = body.find("checked: Coq `") != std::string::npos, p = body.find("paper only:") != std::string::npos;
      EXPECT_TRUE(c || p) << "clause [" << id << "] in spec/" << file
                          << " says neither \"checked: Coq `Name`\" nor \"paper only: why\"";
      checked += c, paper += p;
    }
  }
  EXPECT_GE(checked, 10u);
  EXPECT_GE(paper, 5u);
}

// A clause that says "checked: Coq `Name`" names theorems proofs/ declares, each named after
// that clause; scripts/prove (CTest proofs_coq) checks that Coq proves them, axioms included.
TEST(Spec_Coverage, EveryCheckedClauseNamesCoqTheoremsThatExist) {
  const auto theorems = coq_theorems();
  ASSERT_GE(theorems.size(), 20u) << "proofs/*.v: too few theorems found: is AKV_SOURCE_DIR right?";
  const std::regex name(R"(`([A-Z]{1,3}[0-9]+_[A-Za-z0-9_']*)`)");
  size_t named = 0;
  for (const auto& e : fs::directory_iterator(fs::path(AKV_SOURCE_DIR) / "spec")) {
    if (e.path().extension() != ".md") continue;
    for (const auto& [id, body] : clause_bodies(e.path().filename().string()))
      for (size_t at = body.find("checked: Coq"); at != std::string::npos; at = body.find("checked: Coq", at + 1)) {
        const std::string para = body.substr(at, body.find("\n\n", at) - at);
        for (std::sregex_iterator it(para.begin(), para.end(), name), end; it != end; ++it) {
          const std::string nm = (*it)[1];
          ++named;
          EXPECT_TRUE(theorems.count(nm)) << "clause [" << id << "] says checked: Coq `" << nm << "`, which proofs/ does not declare";
          EXPECT_EQ(nm.rfind(id + "_", 0), 0u) << "clause [" << id << "] cites Coq `" << nm << "`, named after another clause";
        }
      }
  }
  EXPECT_GE(named, 15u) << "the scan found too few Coq names in spec/: is it broken?";
}

// Every Coq theorem named after a clause (<ID>_...) is named after a clause that exists.
TEST(Spec_Coverage, CoqTheoremsAreNamedAfterClausesThatExist) {
  const auto cs = clauses();
  const std::regex clause_name(R"(^([A-Z]{1,3}[0-9]+)_.*)");
  size_t n = 0;
  for (const auto& t : coq_theorems()) {
    std::smatch m;
    if (!std::regex_match(t, m, clause_name)) continue;
    ++n;
    EXPECT_TRUE(cs.count(m[1])) << "proofs/: theorem " << t << " is named after clause [" << m[1] << "], which no spec file defines";
  }
  EXPECT_GE(n, 15u);
}
