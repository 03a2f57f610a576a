// What a check returns: how many comparisons it made, each failure as one line, or why it
// did not apply. A check that compared nothing has not passed (spec: never vacuously).
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "verify/check/closeness.hpp"

namespace akv::check {

struct Report {
  long compared = 0;                  // comparisons made (each an assertion that could fail)
  std::vector<std::string> failures;  // one line each
  std::string skipped;                // non-empty: the check does not apply, and why
  std::vector<std::pair<std::string, Closeness>> observed;  // tallies to report beside the verdict

  /// Counts one comparison; records `what` (prefixed by `context`) when `ok` is false.
  void expect(bool ok, const std::string& what, const std::string& context = "") {
    ++compared;
    if (!ok) failures.push_back(context.empty() ? what : context + ": " + what);
  }
  /// Counts one comparison of two results that must agree: `diff` is "" or the difference.
  void same(const std::string& diff, const std::string& context) { expect(diff.empty(), diff, context); }
  /// Passed: applied, compared something, and nothing failed.
  bool passed() const { return skipped.empty() && compared > 0 && failures.empty(); }
  void merge(const Report& r) {
    compared += r.compared;
    failures.insert(failures.end(), r.failures.begin(), r.failures.end());
    observed.insert(observed.end(), r.observed.begin(), r.observed.end());
  }
};

}  // namespace akv::check
