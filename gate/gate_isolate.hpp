// The gate's child processes (spec/gate.md GT5): loading a kernel library and each check run in
// a process of their own, so a library that crashes, exits, prints or hangs fails what it was
// doing, with a line that says so, and the gate goes on. The child is this binary run afresh
// (`akv gate ... --in-process --report-fd 3`), not a fork, so the library's threads and locks
// start clean in it; it writes its one report to fd 3, its stdout and stderr go to one pipe.
#pragma once
#include <string>
#include <vector>

#include "gate/gate.hpp"

namespace akv::gate {

/// How a child ended, what it reported on fd 3 and the tail of what it printed.
struct ChildRun {
  enum class End { kExited, kSignaled, kTimedOut } end = End::kExited;
  int status = 0;      // kExited: the exit status; kSignaled: the signal
  bool has_report = false;
  std::string report;  // what it wrote to fd 3 (at most 16 MiB; more: no report)
  std::string output;  // its stdout and stderr together, the last 64 KiB

  /// "its process died of signal 11 (SIGSEGV: Segmentation fault)", "did not finish within 5 s
  /// (--check-timeout) ...", "its process exited with status 2 ...": what happened, one line.
  std::string what(int timeout_s) const;
  /// The last `lines` lines of output, each on a line of its own behind "  | ", printable.
  std::string tail(size_t lines = 8) const;
};

/// Runs `/proc/self/exe args...` (akv; args after argv[0]) in a process group of its own with
/// fd 3 the report pipe, for at most `timeout_s` seconds (then its group is killed with
/// SIGKILL). Whatever is left of its group when it ends is killed too (a library that forked).
/// Errors: Error(kOutOfResources) when no pipe or process can be made.
ChildRun run_child(const std::vector<std::string>& args, int timeout_s);

/// The check's report from a child run (`skeleton` from gate::describe_check): the reported
/// check when the child exited 0 or 1 with a report of that property; else `skeleton` failed, its
/// message saying what happened (ChildRun::what), the child's output tail and `rerun` (the
/// command that reproduces it in one process).
gate::Check check_from_child(const ChildRun& run, gate::Check skeleton, int timeout_s, const std::string& rerun);

/// Opens /dev/null on whichever of fds 0, 1 and 2 is closed, so that no pipe of the gate lands there.
void ensure_std_fds();
/// In the gate that starts children: it becomes their subreaper (run_child kills and reaps
/// whatever a child left, setsid'd daemons too), and SIGTERM, SIGINT or SIGHUP kill the
/// running child's group before the gate ends.
void supervise_children();

/// Makes an exit() while gate_running(true) (a kernel library's, from an op or its loading)
/// exit 2 with one line on stderr naming it, never a silent 0 or a cut-off report; in a child
/// (`child`) also makes the parent's death kill it.
void exit_guard(bool child);
/// Sets whether the gate is running on `library` (whose code may run) for exit_guard.
void gate_running(bool running, const std::string& library = "");

}  // namespace akv::gate
