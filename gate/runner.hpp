// The gate's runner (spec/gate.md GT5): what a run of `akv gate` is asked (GateArgs), the
// command lines of its children and its protocol with them (the library probed in a child, one
// check per child, the report written to the report fd), and the checks of its setting before
// any check runs. The flags and the printing are cli/gate_cmd.cpp's.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "gate/gate.hpp"

namespace akv::gate {

struct GateArgs {
  std::string kernels;
  std::string ops;
  gate::Options opt;
  std::string check;        // one check's id: run only it
  int check_timeout_s = 600;
  bool in_process = false;  // load the library and run every check in this process
  bool seed_set = false;
  bool json = false;
  std::string junit;        // --junit FILE: the report as JUnit XML too
  bool list = false, markdown = false;  // --list [--markdown]: the checks and exit codes, no run
  // A child of the gate (gate/gate_isolate.hpp): its one report goes to this fd, as JSON.
  int report_fd = -1;
  bool describe = false;    // the child only loads the library and reports its name and ops
};

// The arguments that run the same gate as `a`, less --check, --in-process and --json.
std::vector<std::string> same_gate(const GateArgs& a);

// `v` as one sh command line after "akv".
std::string shell_words(const std::vector<std::string>& v);

// RC_PARAMS, when set, must parse (else RapidCheck exits at its first use); the gate sets the
// seed and cases itself, so RapidCheck's banner of its own configuration is not printed.
void check_rc_params();

// --out: made when missing; it must be a directory this process can write.
void check_out(const std::string& out);

// What the gate needs of a library: from an OpSet here, or from the child that loaded it.
struct LibInfo {
  std::string name;
  uint32_t provides = 0, own = 0;
};

void check_selection(const GateArgs& a, uint32_t select, const LibInfo& lib);

// Writes `text` whole to `fd`; Error(kBadKernels) naming `library` when it cannot (in a child,
// fd 3 is the report pipe: a library that closed or replaced it).
void write_all(int fd, const std::string& text, const std::string& library);

// The library loaded in a child process: its name and ops, or the child's error (exit 2), or
// Error(kBadKernels) saying how loading it ended the child (a crash, exit(), a hang).
LibInfo probe(const GateArgs& a);

// The check `id` of the gate `a` run in a child process of its own, timed.
gate::Check run_in_child(const GateArgs& a, const std::string& id);

}  // namespace akv::gate
