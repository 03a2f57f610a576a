// One gate check in a child process (spec/gate.md GT5): a kernel library that crashes, aborts or
// hangs fails the check it was running, with a line that says so, and the gate goes on with the
// next check. The child is this binary run afresh (`akv gate ... --check ID --in-process --json`),
// not a fork, so a library's own threads and locks start clean in it.
#pragma once
#include <string>
#include <vector>

#include "verify/gate/gate.hpp"

namespace akv::cli {

/// Runs `/proc/self/exe args...` (args: everything after argv[0], ending in `--check ID --json
/// --in-process`), which prints one gate report with the one check. Returns that check; when the
/// child dies by a signal, runs past `timeout_s` seconds (then it is killed with SIGKILL), exits
/// with another status or prints no report, returns `skeleton` (gate::describe_check) failed,
/// its message naming what happened, the tail of the child's stderr and `rerun` (the command
/// that reproduces it in one process). The child's exit 2 (bad input or library, which the
/// parent's own checks should have caught first) is Error(kBadKernels) with the child's line.
/// Errors: Error(kOutOfResources) when no child can be started.
gate::Check run_check_in_child(const std::vector<std::string>& args, gate::Check skeleton, int timeout_s,
                               const std::string& rerun);

}  // namespace akv::cli
