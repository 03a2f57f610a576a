// The guard of akv serve (spec/serving.md SV7): the verdict on each tool result of a request,
// taken before generation, from regular expressions or a command the host supplies.
#pragma once
#include <mutex>
#include <regex>
#include <string>
#include <unordered_map>
#include <vector>

#include "reference/error.hpp"

namespace akv::serve {

struct GuardOptions {
  std::vector<std::string> patterns;  // ECMAScript regexes; a match flags
  std::string command;                // run by /bin/sh -c, the tool result on stdin; "" none
  int timeout_s = 10;                 // the command's wall-clock limit per tool result
};

/// The guard command failed (could not start, exited other than 0 or 1, was killed or timed
/// out): the request fails closed with 500 `guard_failed`, nothing queued (SV7).
struct GuardFailed : Error {
  explicit GuardFailed(const std::string& what) : Error(ErrorCode::kOutOfResources, what) {}
};

class Guard {
 public:
  /// Compiles the patterns. Error(kBadInput) naming a pattern that is not a regex, or for a
  /// timeout outside [1, 3600].
  explicit Guard(GuardOptions opt);

  /// True when a pattern matches `content`, or when the command exits 1 on it (exit 0: not
  /// flagged). Verdicts are kept by the caller's scope and the content's SHA-256 (a host resends
  /// every tool result each turn), so the command runs once per distinct content of a scope
  /// (never answering one caller from another's verdict or its timing, SV10); it must be a
  /// function of its input. Throws GuardFailed. Thread-safe: HTTP threads call it concurrently.
  bool flags(const std::string& content, const std::string& scope = "");

  bool active() const { return !regexes_.empty() || !opt_.command.empty(); }
  const GuardOptions& options() const { return opt_; }

 private:
  /// The command's verdict on `content`; throws GuardFailed.
  bool run_command(const std::string& content) const;
  GuardOptions opt_;
  std::vector<std::regex> regexes_;
  std::mutex mu_;
  std::unordered_map<std::string, bool> verdicts_;  // SHA-256 of the content -> the command's verdict
  static constexpr size_t kMaxVerdicts = size_t{1} << 16;
};

}  // namespace akv::serve
