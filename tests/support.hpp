// Shared fixtures of the test suites: models, sessions built from spans, file paths.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "readers/conversation/chat_parse.hpp"
#include "reference/backend.hpp"
#include "reference/chat.hpp"
#include "reference/model.hpp"
#include "reference/session.hpp"
#include "verify/check/models.hpp"
#include "verify/check/run.hpp"
#include "verify/compare.hpp"
#include "runtime/digest.hpp"

namespace akv::test {

/// The source tree: $AKV_SOURCE_DIR when set (a test binary run from a bundle on another
/// machine, scripts/gpu-check --from-bundle), else the tree it was built from.
inline std::string source_dir() {
  const char* env = std::getenv("AKV_SOURCE_DIR");
  return env && *env ? env : AKV_SOURCE_DIR;
}
inline std::string example(const std::string& name) { return source_dir() + "/examples/conversations/" + name; }

/// The file names of every bundled conversation (examples/conversations/*.json), sorted.
inline std::vector<std::string> bundled_conversations() {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(source_dir() + "/examples/conversations"))
    if (e.path().extension() == ".json") out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

/// The tiny model with weight seed 1, built once per process (the harness's).
inline std::shared_ptr<const Model> tiny() { return check::tiny_model(); }

/// The spans (one per message) of a bundled conversation.
inline std::vector<std::vector<Token>> spans_of(const std::string& file) {
  std::vector<std::vector<Token>> out;
  for (const Message& m : load_conversation(example(file)).messages) out.push_back(encode_message(m));
  return out;
}

/// Appends every span whose index is not in `skip`, span id = index.
inline void build(Session& s, const std::vector<std::vector<Token>>& spans, const std::set<size_t>& skip = {}) {
  for (size_t i = 0; i < spans.size(); ++i)
    if (!skip.count(i)) s.append(i, spans[i]);
}

/// The reference backend over tiny, one per process (its scratch is NaN-poisoned in tests).
inline Backend& tiny_reference() {
  static auto be = [] {
    auto b = make_reference_backend(tiny());
    b->set_scratch_poison(std::numeric_limits<float>::quiet_NaN());
    return b;
  }();
  return *be;
}

/// A session of `file` on tiny_reference() without the messages in `skip`, built once per
/// process and returned by value, so a test can mutate its copy.
inline Session built(const std::string& file, const std::set<size_t>& skip = {}) {
  static std::map<std::pair<std::string, std::set<size_t>>, Session> memo;
  auto key = std::make_pair(file, skip);
  auto it = memo.find(key);
  if (it == memo.end()) {
    Session s(tiny_reference());
    build(s, spans_of(file), skip);
    it = memo.emplace(key, std::move(s)).first;
  }
  return it->second;
}

/// Deterministic token sequence of length n over the whole vocabulary (the harness's).
using check::tokens;

}  // namespace akv::test
