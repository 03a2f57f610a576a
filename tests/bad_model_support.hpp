// The one check of a refusal the reader suites share: f() throws Error(kBadModel), one line,
// naming `part` (spec/gguf.md, spec/tokenizer.md T1, T12).
#pragma once
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include "reference/error.hpp"

namespace akv::test {

inline void expect_bad_model(const std::function<void()>& f, const std::string& part) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one naming: " << part;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kBadModel) << e.what();
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << "two lines: " << e.what();
  }
}

}  // namespace akv::test
