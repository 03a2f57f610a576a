// Three JSON texts every reader of untrusted JSON refuses (readers/json_limited, the rules of
// spec/input.md IN3 and of the model files' clauses): nesting 10,000 deep, a key repeated in
// one object, a NUL byte. Each with the piece of the one-line message it must give.
#pragma once
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "reference/error.hpp"

namespace akv::test {

struct HostileJson {
  std::string what;    // for failure messages
  std::string text;
  std::string needle;  // a piece of the error message
};

inline std::vector<HostileJson> hostile_json() {
  return {{"nested 10000 deep", "{\"a\": " + std::string(10000, '[') + std::string(10000, ']') + "}", "JSON nested deeper than"},
          {"a repeated key", R"({"a": 1, "a": 2})", "key 'a' repeated in one object"},
          {"a NUL byte", std::string("{\"a\": 1}\0x", 10), "NUL byte at offset 8"}};
}

/// Writes each hostile text to `path` and calls `read(path)`: each must throw Error(code) on one
/// line naming `path` and the problem.
inline void expect_hostile_json_refused(const std::string& path, ErrorCode code, const std::function<void(const std::string&)>& read) {
  for (const HostileJson& h : hostile_json()) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << h.text;
    try {
      read(path);
      ADD_FAILURE() << h.what << " was read";
    } catch (const Error& e) {
      const std::string m = e.what();
      EXPECT_EQ(e.code(), code) << h.what << ": " << m;
      EXPECT_NE(m.find(path), std::string::npos) << h.what << ": the message does not name the file: " << m;
      EXPECT_NE(m.find(h.needle), std::string::npos) << h.what << ": " << m;
      EXPECT_EQ(m.find('\n'), std::string::npos) << h.what << ": two lines: " << m;
    }
  }
}

}  // namespace akv::test
