// Whole-file reads for the tests that check sources, scripts and the spec as text.
#pragma once
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace akv::test {

/// The bytes of the file at `path` as a string; "" when it cannot be opened.
inline std::string read_text(const std::filesystem::path& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

}  // namespace akv::test
