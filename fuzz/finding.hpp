// What every akv fuzz target does with a finding: one line on stderr, then abort so libFuzzer
// writes the input as a crash artifact (docs/fuzzing.md).
#pragma once
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "reference/error.hpp"

namespace akv::fuzz {

[[noreturn]] inline void finding(const char* what) {
  std::fprintf(stderr, "akv fuzz finding: %s\n", what);
  std::abort();
}

/// A model reader's refusal must be Error(kBadModel) with a one-line message (spec/gguf.md F7,
/// spec/safetensors.md); anything else is a finding.
inline void check_bad_model(const Error& e) {
  if (e.code() != ErrorCode::kBadModel || std::string_view(e.what()).find('\n') != std::string_view::npos)
    std::fprintf(stderr, "akv fuzz: the error was %s: %s\n", error_code_name(e.code()), e.what());  // to fix it
  if (e.code() != ErrorCode::kBadModel) finding("an error other than bad_model");
  if (std::string_view(e.what()).find('\n') != std::string_view::npos) finding("an error message of two lines");
}

}  // namespace akv::fuzz
