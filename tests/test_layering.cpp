// The layer order of docs/architecture.md, enforced: every C/C++ source of a room includes only
// its own room and the rooms its row of the table lists ("may include"), each of them a row
// below it (so the order has no cycle); every top-level folder with sources is a room of the
// table; every room's README states the same "may include" as the table. And one source
// only declares RapidCheck's private functions (the one runner, verify/check/rc_runner.cpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "text_file.hpp"

namespace fs = std::filesystem;

namespace {

using akv::test::read_text;

struct Room {
  std::string folder;              // "cli/", "tests/support/"
  std::set<std::string> includes;  // the folders it may include, besides its own
  size_t row = 0;                  // 0 = the top of the table
};

const fs::path& root() {
  static const fs::path r = fs::weakly_canonical(AKV_SOURCE_DIR);
  return r;
}

// The backticked folders of a Markdown cell or line: `cli/`, `tests/support/`.
std::set<std::string> folders_in(const std::string& text) {
  std::set<std::string> out;
  static const std::regex folder(R"(`([a-z_\-]+(?:/[a-z_\-]+)*/)`)");
  for (std::sregex_iterator it(text.begin(), text.end(), folder), end; it != end; ++it) out.insert((*it)[1]);
  return out;
}

// The table of docs/architecture.md under its header row "| folder | what it is | may include |".
std::vector<Room> layer_table() {
  std::vector<Room> rooms;
  std::stringstream s(read_text(root() / "docs" / "architecture.md"));
  bool in_table = false;
  for (std::string line; std::getline(s, line);) {
    if (line.rfind("| folder | what it is | may include |", 0) == 0) {
      in_table = true;
      continue;
    }
    if (!in_table) continue;
    if (line.rfind("|", 0) != 0) break;
    if (line.rfind("|---", 0) == 0) continue;
    std::vector<std::string> cells;
    for (size_t at = 1; at < line.size();) {
      const size_t bar = line.find('|', at);
      if (bar == std::string::npos) break;
      cells.push_back(line.substr(at, bar - at));
      at = bar + 1;
    }
    if (cells.size() < 3) continue;
    const auto own = folders_in(cells[0]);
    if (own.size() != 1) continue;
    rooms.push_back({*own.begin(), folders_in(cells[2]), rooms.size()});
  }
  return rooms;
}

// The room of `rel` (a path from the root): the longest folder that starts it, or null.
const Room* room_of(const std::vector<Room>& rooms, const std::string& rel) {
  const Room* best = nullptr;
  for (const auto& r : rooms)
    if (rel.rfind(r.folder, 0) == 0 && (!best || r.folder.size() > best->folder.size())) best = &r;
  return best;
}

bool is_source(const fs::path& p) {
  const std::string ext = p.extension().string();
  return ext == ".cpp" || ext == ".hpp" || ext == ".h" || ext == ".c" || ext == ".cu" || ext == ".cuh";
}

std::string from_root(const fs::path& p) { return fs::weakly_canonical(p).lexically_relative(root()).generic_string(); }

// Where a quoted include resolves: the file's folder or one above it (a target's include
// directory), the root, include/. <akv/...> is include/. Empty when none (a system header).
std::string resolve(const fs::path& file, const std::string& name, bool angle) {
  if (angle) return name.rfind("akv/", 0) == 0 && fs::exists(root() / "include" / name) ? "include/" + name : "";
  for (fs::path d = file.parent_path();; d = d.parent_path()) {
    if (fs::exists(d / name)) return from_root(d / name);
    if (d == root() || d == d.parent_path()) break;
  }
  if (fs::exists(root() / "include" / name)) return "include/" + name;
  return "";
}

struct Violation {
  std::string where, what;
};

std::vector<Violation> violations(const std::vector<Room>& rooms) {
  std::vector<Violation> out;
  static const std::regex include(R"(^\s*#\s*include\s*([<"])([^>"]+)[>"])");
  for (auto it = fs::recursive_directory_iterator(root()); it != fs::recursive_directory_iterator(); ++it) {
    const std::string name = it->path().filename().string();
    if (it->is_directory() && (name == "build" || name == ".git" || name == "shared")) {
      it.disable_recursion_pending();
      continue;
    }
    if (!it->is_regular_file() || !is_source(it->path())) continue;
    const std::string rel = from_root(it->path());
    const Room* from = room_of(rooms, rel);
    if (!from) {
      out.push_back({rel, "is in no room of docs/architecture.md's layer table"});
      continue;
    }
    std::stringstream s(read_text(it->path()));
    int n = 0;
    for (std::string line; std::getline(s, line);) {
      ++n;
      std::smatch m;
      if (!std::regex_search(line, m, include)) continue;
      const std::string target = resolve(it->path(), m[2].str(), m[1].str() == "<");
      if (target.empty()) continue;
      const Room* to = room_of(rooms, target);
      if (to == from) continue;
      if (!to || !from->includes.count(to->folder))
        out.push_back({rel + ":" + std::to_string(n), "includes " + target + " (room " + (to ? to->folder : "none") +
                                                          "), which room " + from->folder + " may not include"});
    }
  }
  return out;
}

}  // namespace

TEST(Layering_IncludeOrder, TheTableIsAnOrder) {
  const auto rooms = layer_table();
  ASSERT_GE(rooms.size(), 10u) << "docs/architecture.md: no layer table found";
  std::map<std::string, size_t> row;
  for (const auto& r : rooms) EXPECT_TRUE(row.emplace(r.folder, r.row).second) << r.folder << " is two rows";
  for (const auto& r : rooms)
    for (const auto& inc : r.includes) {
      ASSERT_TRUE(row.count(inc)) << r.folder << " may include " << inc << ", which is no row of the table";
      EXPECT_GT(row[inc], r.row) << r.folder << " may include " << inc << ", which is not below it: the order has a cycle";
    }
}

TEST(Layering_IncludeOrder, EveryTopFolderWithSourcesIsARoom) {
  const auto rooms = layer_table();
  for (const auto& e : fs::directory_iterator(root())) {
    const std::string name = e.path().filename().string();
    if (!e.is_directory() || name == "build" || name == ".git" || name == "shared") continue;
    bool sources = false;
    for (const auto& f : fs::recursive_directory_iterator(e.path())) sources = sources || (f.is_regular_file() && is_source(f.path()));
    if (sources) {
      EXPECT_TRUE(room_of(rooms, name + "/") || std::any_of(rooms.begin(), rooms.end(), [&](const Room& r) {
                    return r.folder.rfind(name + "/", 0) == 0;
                  })) << name << "/ holds sources but is no room of docs/architecture.md's layer table";
    }
  }
}

TEST(Layering_IncludeOrder, NoRoomIncludesARoomAboveIt) {
  const auto rooms = layer_table();
  ASSERT_GE(rooms.size(), 10u);
  const auto v = violations(rooms);
  for (const auto& x : v) ADD_FAILURE() << x.where << ": " << x.what << " (docs/architecture.md)";
  EXPECT_TRUE(v.empty());
}

TEST(Layering_IncludeOrder, EachRoomsReadmeSaysWhatItMayInclude) {
  for (const auto& r : layer_table()) {
    const fs::path readme = root() / r.folder / "README.md";
    ASSERT_TRUE(fs::exists(readme)) << r.folder << " has no README.md";
    std::stringstream s(read_text(readme));
    std::string said;
    for (std::string line; std::getline(s, line);)
      if (line.rfind("**May include:**", 0) == 0) said = line;
    ASSERT_FALSE(said.empty()) << r.folder << "README.md has no line starting \"**May include:**\"";
    EXPECT_EQ(folders_in(said), r.includes)
        << r.folder << "README.md's \"May include\" differs from docs/architecture.md's table: " << said;
  }
}

TEST(Layering_IncludeOrder, RapidChecksPrivateFunctionsAreDeclaredInOneFile) {
  // An own declaration of rc::detail is a second runner in the making: every property runs
  // through verify/check/rc_runner.hpp.
  const std::regex opens(R"(namespace\s+rc\s*(::\s*detail\s*\{|\{\s*namespace\s+detail\b))");
  std::vector<std::string> found;
  for (auto it = fs::recursive_directory_iterator(root()); it != fs::recursive_directory_iterator(); ++it) {
    const std::string name = it->path().filename().string();
    if (it->is_directory() && (name == "build" || name == ".git" || name == "shared")) {
      it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file() && is_source(it->path()) && std::regex_search(read_text(it->path()), opens))
      found.push_back(from_root(it->path()));
  }
  EXPECT_EQ(found, std::vector<std::string>{"verify/check/rc_runner.cpp"});
}

TEST(Layering_Names, ARoomsCodeIsInItsRoomsNamespace) {
  // The folder says the layer, the namespace says it again (issue 44): the readers of untrusted
  // bytes are akv::readers, the chat templates akv::chat, and no source names another room's.
  const std::regex opens(R"(namespace\s+akv::([a-z_]+))");
  for (const auto& [folder, ns] : std::vector<std::pair<std::string, std::string>>{{"readers", "readers"}, {"chat", "chat"}}) {
    size_t opened = 0;
    for (const auto& f : fs::recursive_directory_iterator(root() / folder)) {
      if (!f.is_regular_file() || !is_source(f.path())) continue;
      const std::string text = read_text(f.path());
      for (std::sregex_iterator it(text.begin(), text.end(), opens), end; it != end; ++it) {
        ++opened;
        EXPECT_EQ((*it)[1].str(), ns) << from_root(f.path()) << " opens namespace akv::" << (*it)[1];
      }
    }
    EXPECT_GT(opened, 5u) << folder << "/: no namespace found to check";
  }
}
