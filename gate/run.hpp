// One run of `akv gate` (spec/gate.md GT1-GT5), without its printing: the setting checked
// before any check runs (exit 2), stdout kept from the library, RC_PARAMS validated, and the
// checks run in this process or one child each, the gate's child protocol included. The CLI
// (cli/gate_cmd.cpp) holds the flags and prints what the callbacks hand it.
#pragma once
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "gate/gate.hpp"
#include "gate/runner.hpp"

namespace akv::gate {

/// What a run tells its printer as it goes.
struct RunEvents {
  /// After the library is loaded, before the first check: its name and ops.
  std::function<void(const LibInfo& lib)> started;
  /// A check is about to run in a child: its id, and how many ran before it of `total`.
  std::function<void(const std::string& id, size_t done, size_t total)> starting;
  /// A check ended: its result.
  std::function<void(const Check& c)> finished;
};

/// What the run found; `code` is the exit code (0 every check passed, 1 one failed or nothing
/// was checked: GT1's verdict, never vacuous).
struct RunResult {
  LibInfo lib;
  std::vector<Check> checks;
  int code = 1;
  /// Where the JSON report goes: the report fd (a child), else the real stdout, kept on another
  /// fd while fd 1 points at stderr, so that a library's own prints cannot corrupt it; -1 without --json.
  int json_fd = -1;
  bool described = false;  // --describe: the child wrote its library's name and ops to the report fd
};

/// The ops of `--ops LIST` (comma-separated names, empty: all) as bits of AKV_OP_*.
/// Error(kBadInput) naming an empty or unknown name.
uint32_t parse_ops(const std::string& list);

/// Runs the gate `a` asks for (not --list: that is the CLI's). Throws Error(kBadInput) for a
/// bad setting before any check runs (an unknown check id, RC_PARAMS that replays another
/// check or does not parse, an unwritable --out, a bad --model or --kv-type), Error(kBadKernels)
/// for a library that cannot be loaded. Sets `error_json_fd` to where an error's JSON must go
/// from then on (the CLI's json_error_fd, IN5). The seed is drawn from the clock when not set.
RunResult run(GateArgs& a, const RunEvents& events, int& error_json_fd);

}  // namespace akv::gate
