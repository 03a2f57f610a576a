// The comment text of a source file, line by line, for tests that check what comments cite
// (tests/test_spec_coverage.cpp).
#pragma once
#include <sstream>
#include <string>
#include <vector>

namespace akv::test {

struct CommentLine {
  int line = 0;      // 1-based
  std::string text;  // the comment's text on that line
};

/// The comments of `text`: `//` and `/* */` when `c_like` (C++, CUDA), else `#` comments that
/// start a line or follow a blank (shell, Python, CMake; not `#!`). String literals are not
/// parsed: a `//` inside a string counts as a comment, which only makes the scan stricter.
inline std::vector<CommentLine> comment_lines(const std::string& text, bool c_like) {
  std::vector<CommentLine> out;
  std::stringstream s(text);
  std::string line;
  bool in_block = false;
  for (int n = 1; std::getline(s, line); ++n) {
    std::string com;
    if (c_like) {
      for (size_t i = 0; i < line.size();) {
        if (in_block) {
          const size_t j = line.find("*/", i);
          com += line.substr(i, j == std::string::npos ? std::string::npos : j - i);
          if (j == std::string::npos) break;
          in_block = false;
          i = j + 2;
          continue;
        }
        const size_t a = line.find("//", i), b = line.find("/*", i);
        if (a == std::string::npos && b == std::string::npos) break;
        if (a != std::string::npos && (b == std::string::npos || a < b)) {
          com += line.substr(a + 2);
          break;
        }
        in_block = true;
        i = b + 2;
      }
    } else {
      for (size_t i = 0; i < line.size(); ++i)
        if (line[i] == '#' && (i == 0 || line[i - 1] == ' ' || line[i - 1] == '\t') &&
            (i + 1 >= line.size() || line[i + 1] != '!')) {
          com = line.substr(i + 1);
          break;
        }
    }
    if (!com.empty()) out.push_back({n, com});
  }
  return out;
}

}  // namespace akv::test
