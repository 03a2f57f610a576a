// Progress of a long run on stderr, only when stderr is a terminal (a pipe, a log file or a
// test sees nothing): one line, rewritten in place, cleared when the run ends.
#pragma once
#include <string>

#include "verify/witness.hpp"

namespace akv::cli {

/// A WitnessProgress printing "akv witness: PHASE: DONE/TOTAL tokens (S s)" on stderr when it
/// is a terminal; empty (nothing printed) otherwise.
WitnessProgress tty_progress(const std::string& command);

/// Clears the progress line when stderr is a terminal.
void end_progress();

/// Clears the progress line when it goes out of scope, so an error message starts a clean line.
struct ProgressLine {
  ProgressLine() = default;
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;
  ~ProgressLine() { end_progress(); }
};

}  // namespace akv::cli
