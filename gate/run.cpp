#include "gate/run.hpp"

#include <rapidcheck.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <sstream>

#include "gate/environment.hpp"
#include "gate/gate_isolate.hpp"
#include "optimized/composed/op_set.hpp"
#include "optimized/composed/plugin.hpp"
#include "reference/error.hpp"
#include "reference/kv_types.hpp"
#include "runtime/models.hpp"

namespace akv::gate {

uint32_t parse_ops(const std::string& list) {
  if (list.empty()) return AKV_OP_ALL;
  uint32_t bits = 0;
  std::stringstream ss(list);
  std::string name;
  while (std::getline(ss, name, ',')) {
    if (name.empty()) throw Error(ErrorCode::kBadInput, "--ops: an empty name in '" + list + "'");
    bits |= op_bit(name);
  }
  if (list.back() == ',') throw Error(ErrorCode::kBadInput, "--ops: an empty name in '" + list + "'");
  return bits;
}

namespace {

// Everything that is exit 2 is found before the first check runs (GT5).
void check_setting(GateArgs& a, bool child) {
  // A bad --model, or a cache type the model cannot take (q8_0 on tiny), is exit 2 before any
  // check runs; the model is loaded once, and not at all by a child running one op check (its
  // parent checked both) or describing the library.
  if (!a.describe && !(child && !a.check.empty() && a.check.rfind("GT4.", 0) != 0))
    check_kv_type(a.opt.kv_type, load_model(a.opt.model).model->config);
  if (!a.check.empty()) describe_check(a.check);  // an unknown id is exit 2 before any check runs
  check_rc_params();
  if (!rc::detail::configuration().reproduce.empty() && a.check.empty() && !a.describe)
    throw Error(ErrorCode::kBadInput, "RC_PARAMS replays a failure: name its check with --check ID (the id on the failure's report)");
  if (const auto keys = replay_keys(); !keys.empty() && !a.check.empty() &&
      std::find(keys.begin(), keys.end(), replay_key(a.check)) == keys.end())
    throw Error(ErrorCode::kBadInput, "RC_PARAMS' reproduce string replays " + keys.front() + ", not --check " + a.check +
                                          ": use the reproduce line of that check's failure");
  if (!a.describe) {
    check_out(a.opt.out);
    // Absolute, so that a library that changes the working directory cannot move the files.
    a.opt.out = std::filesystem::absolute(a.opt.out).lexically_normal().string();
  }
}

}  // namespace

RunResult run(GateArgs& a, const RunEvents& events, int& error_json_fd) {
  if (a.markdown) throw Error(ErrorCode::kBadInput, "--markdown goes with --list");
  if (a.kernels.empty()) throw Error(ErrorCode::kBadInput, "--kernels LIB.so is required (or --list)");
  const bool child = a.report_fd >= 0;
  if (a.describe && !child) throw Error(ErrorCode::kBadInput, "--describe is the gate's own child's option: it needs --report-fd");
  if (child) a.json = a.in_process = true;
  if (!child) ensure_std_fds();  // else a pipe could land on fd 0, 1 or 2
  exit_guard(child);
  if (!a.in_process) supervise_children();
  RunResult r;
  // The JSON report goes to the report fd (a child) or the real stdout, which a library's own
  // prints then cannot corrupt: fd 1 becomes fd 2 while the gate runs.
  r.json_fd = a.json ? a.report_fd : -1;
  if (a.json && !child) {
    fflush(stdout);
    r.json_fd = ::dup(STDOUT_FILENO);
    if (r.json_fd < 0 || ::dup2(STDERR_FILENO, STDOUT_FILENO) < 0) throw Error(ErrorCode::kOutOfResources, "gate: cannot set up stdout");
  }
  error_json_fd = child ? -1 : a.json ? r.json_fd : STDOUT_FILENO;  // an error's JSON goes where the report would
  const uint32_t select = parse_ops(a.ops);
  check_setting(a, child);
  if (!a.seed_set) a.opt.seed = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());

  gate_running(true, a.kernels);
  std::shared_ptr<const OpSet> ops;
  try {
    if (a.in_process) {
      ops = load_kernels(a.kernels, select);
      r.lib = {ops->name(), ops->plugin().provides, ops->own()};
    } else {
      r.lib = probe(a);
    }
    check_selection(a, select, r.lib);
    if (a.describe) {
      write_all(r.json_fd, nlohmann::json{{"name", r.lib.name}, {"provides", r.lib.provides}, {"own", r.lib.own}}.dump() + "\n",
                a.kernels);
      gate_running(false);
      r.described = true;
      r.code = 0;
      return r;
    }
    a.opt.environment = environment(a.kernels);  // after loading: a missing library is the loader's error
    if (events.started) events.started(r.lib);
    const size_t total = check_ids().size();
    auto in_child = [&](const std::string& id) {
      if (events.starting) events.starting(id, r.checks.size(), total);
      return run_in_child(a, id);
    };
    auto finished = [&](const Check& c) {
      if (events.finished) events.finished(c);
    };
    if (!a.check.empty()) {
      r.checks.push_back(a.in_process ? run_check(a.check, ops, a.opt) : in_child(a.check));
      finished(r.checks.back());
    } else if (a.in_process) {
      r.checks = run_gate(ops, a.opt, finished);
    } else {
      for (const std::string& id : check_ids()) {
        r.checks.push_back(in_child(id));
        finished(r.checks.back());
      }
    }
  } catch (...) {
    gate_running(false);
    throw;
  }
  gate_running(false);
  // One check (--check): its own result; the whole gate: verdict (never vacuous).
  r.code = !a.check.empty() ? (r.checks.back().result == "pass" ? 0 : 1) : verdict(r.checks, r.lib.own);
  return r;
}

}  // namespace akv::gate
