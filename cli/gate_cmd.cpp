// akv gate --kernels LIB.so [--ops LIST] [--cases N] [--e2e-cases N] [--budget S] [--seed S] [--model M]
//          [--json] [--junit FILE] [--out DIR] [--check ID] [--check-timeout S] [--in-process]
// akv gate --list [--markdown]
// The regression gate for anyone's kernels (spec/gate.md): loads a kernel library of the ABI
// in include/akv/kernels.h, checks every op it provides for invariance (GT2) and accuracy
// (GT3), then the composed model end to end (GT4). A failure prints the property, the
// RapidCheck reproduce string and the shrunk counterexample's file. Loading the library and
// each check run in a process of their own (gate/gate_isolate.hpp, gate/runner.hpp), so a library that crashes,
// exits or hangs fails that check and the rest still run. Exit 0 every check passed, 1 one
// failed (or nothing was checked), 2 bad input or a bad library.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <iostream>

#include "cli/commands.hpp"
#include "cli/options.hpp"
#include "cli/shared_options.hpp"
#include "gate/check_list.hpp"
#include "gate/environment.hpp"
#include "gate/gate.hpp"
#include "gate/junit.hpp"
#include "gate/run.hpp"
#include "gate/runner.hpp"
#include "optimized/composed/op_set.hpp"
#include "reference/error.hpp"
#include "runtime/models.hpp"

namespace akv::cli {

namespace {

using gate::GateArgs;

// A line on stderr when it is a terminal (what runs now), else nothing.
void tty_status(const std::string& line) {
  static const bool tty = ::isatty(STDERR_FILENO) == 1;
  if (tty) std::cerr << "\r\033[K" << line << std::flush;
}

// The first lines of the report: the seed, before any check can fail or hang (GT5), and the setting.
void print_start(const GateArgs& a, const gate::LibInfo& lib) {
  const bool child = a.report_fd >= 0;
  if (a.json) {
    if (!child) std::cerr << fmt::format("akv gate: seed {}\n", a.opt.seed) << std::flush;
    return;
  }
  std::cout << fmt::format("akv gate: seed {} ({}; --seed {} replays this run)\n", a.opt.seed,
                           a.seed_set ? "--seed" : "from the clock", a.opt.seed)
            << fmt::format("akv gate: {} ({}), ops {}, {} cases per op property, {} per end-to-end one, budget {:g} s per check, model {}\n",
                           a.kernels, lib.name, op_list(lib.own), a.opt.cases, gate::e2e_cases(a.opt), a.opt.budget_s,
                           a.opt.model + (a.opt.kv_type == KvType::kF32 ? "" : std::string(", cache ") + kv_type_name(a.opt.kv_type)))
            << "  " << gate::environment_line(a.opt.environment) << "\n"
            << std::flush;
}

// One finished check: a line (JSON: on stderr, as ctest -V shows it), a failure's reproduce
// line, counterexample and C snippet.
void print_check(const GateArgs& a, const gate::Check& c, size_t done, size_t total) {
  const std::string tag = c.result == "pass" ? "PASS" : c.result == "fail" ? "FAIL" : "SKIP";
  tty_status("");
  if (a.json) {
    if (a.report_fd < 0)
      std::cerr << fmt::format("akv gate: [{}/{}] {} {} ({} cases, {:.1f} s)\n", done, total, tag, c.property, c.cases, c.seconds) << std::flush;
    return;
  }
  std::cout << fmt::format("{} {:<44} {}\n", tag, c.property,
                           c.result == "skipped" ? c.message : fmt::format("{} cases, {:.1f} s", c.cases, c.seconds));
  if (c.result == "pass" && !c.message.empty()) std::cout << "  note: " << c.message << "\n";
  if (c.result != "fail") return void(std::cout << std::flush);
  std::string msg = c.message;  // continuation lines indented under the check
  for (size_t at = 0; (at = msg.find('\n', at)) != std::string::npos; at += 3) msg.replace(at, 1, "\n  ");
  std::cout << "  " << msg << "\n";
  if (c.first_failure) std::cout << fmt::format("  first failing case: {}\n", c.first_failure);
  if (!c.reproduce.empty()) {
    std::vector<std::string> replay = gate::same_gate(a);
    replay.insert(replay.end(), {"--check", c.property});
    std::cout << fmt::format("  reproduce: {}RC_PARAMS=\"{}\" {}\n", gate::env_prefix(a.opt.environment["env"]), c.reproduce,
                             gate::shell_words(replay));
  }
  if (!c.counterexample.empty())
    std::cout << fmt::format("  counterexample: {} ({} bytes; {})\n", c.counterexample, c.counterexample_bytes, c.counterexample_shape);
  if (!c.c_snippet.empty()) std::cout << fmt::format("  as C for your unit test: {}\n", c.c_snippet);
  std::cout << std::flush;
}

// The verdict: JSON (to the fd the gate kept for it) or a summary line, and --junit.
void print_verdict(const GateArgs& a, const gate::RunResult& r) {
  int passed = 0, failed = 0, skipped = 0;
  for (const auto& c : r.checks) (c.result == "pass" ? passed : c.result == "fail" ? failed : skipped)++;
  if (!a.junit.empty() && a.report_fd < 0)
    write_text_file(a.junit, gate::junit_xml(r.checks, a.kernels + " (" + r.lib.name + ")",
                                             fmt::format("seed {}; {}", a.opt.seed, gate::environment_line(a.opt.environment))));
  if (a.json) {
    nlohmann::json j{{"kernels", a.kernels}, {"name", r.lib.name}, {"abi_version", AKV_KERNELS_ABI_VERSION},
                     {"provides", op_list(r.lib.provides)}, {"checked_ops", op_list(r.lib.own)}, {"model", a.opt.model},
                     {"seed", a.opt.seed}, {"cases", a.opt.cases}, {"e2e_cases", gate::e2e_cases(a.opt)},
                     {"kv_type", kv_type_name(a.opt.kv_type)},
                     {"budget_s", a.opt.budget_s}, {"environment", a.opt.environment},
                     {"verdict", r.code == 0 ? "pass" : "fail"}, {"checks", nlohmann::json::array()}};
    for (const auto& c : r.checks) j["checks"].push_back(gate::to_json(c));
    gate::write_all(r.json_fd, j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n", a.kernels);
    return;
  }
  std::cout << fmt::format("akv gate: {}: {} passed, {} failed, {} skipped\n", r.code == 0 ? "PASS" : "FAIL", passed, failed, skipped);
  if (r.code != 0 && failed == 0)
    std::cout << (a.check.empty() ? "akv gate: a provided op was checked by no property: not a pass\n"
                                  : "akv gate: the check did not run (skipped): not a pass\n");
}

int run_gate_cmd(GateArgs& a) {
  if (a.list) {
    std::cout << (a.markdown ? gate::check_list_markdown() : gate::check_list_text() + "\nExit codes:\n" + gate::exit_codes_text());
    return 0;
  }
  const size_t total = gate::check_ids().size();
  size_t done = 0;
  gate::RunEvents events;
  events.started = [&](const gate::LibInfo& lib) { print_start(a, lib); };
  events.starting = [&](const std::string& id, size_t ran, size_t) { tty_status(fmt::format("akv gate: [{}/{}] {} ...", ran + 1, total, id)); };
  events.finished = [&](const gate::Check& c) { print_check(a, c, ++done, total); };
  const gate::RunResult r = gate::run(a, events, json_error_fd());
  if (!r.described) print_verdict(a, r);
  return r.code;
}

}  // namespace

Command add_gate(CLI::App& app) {
  auto a = std::make_shared<GateArgs>();
  auto* c = app.add_subcommand("gate", "Check a kernel library (include/akv/kernels.h): per-op invariance and accuracy, then E1 and I1 through the composed model");
  c->add_option("--kernels", a->kernels, "The kernel library (a shared object exporting akv_get_kernels); required but with --list")->check(nonempty());
  c->add_option("--ops", a->ops,
                fmt::format("Ops to take from the library, comma-separated: {} (default: all it provides; the rest run on the reference)",
                            fmt::join(op_names(), ", ")))
      ->check(nonempty());
  c->add_option("--cases", a->opt.cases, "RapidCheck cases per op property")->capture_default_str()->check(decimal(1, 1000000));
  c->add_option("--e2e-cases", a->opt.e2e_cases, "Cases per end-to-end property (default: --cases / 5, at least 1)")->check(decimal(1, 1000000));
  c->add_option("--budget", a->opt.budget_s,
                "Seconds a check draws new cases; then it stops, says how many ran (never a pass on 0) and shrinks a failure as long again")
      ->capture_default_str()
      ->check(CLI::Range(0.001, 86400.0));
  c->add_option("--seed", a->opt.seed, "RapidCheck seed (default: from the clock; printed)")
      ->check(decimal(0, UINT64_MAX))
      ->each([a](const std::string&) { a->seed_set = true; });
  c->add_option("--model", a->opt.model, "The end-to-end checks' model: " + names_help(model_forms()))->capture_default_str()->check(nonempty());
  c->add_option("--out", a->opt.out, "Directory for counterexample files")->capture_default_str()->check(nonempty());
  add_kv_type_option(c, a->opt.kv_type);
  c->add_flag("--json", a->json, "Print the verdict and every check as JSON (progress: one line per check on stderr)");
  c->add_option("--junit", a->junit, "Also write the report as JUnit XML to FILE (one testcase per check)")->check(nonempty());
  c->add_flag("--list", a->list, "Print every check (id, kind, what it asserts) and the exit codes, and exit");
  c->add_flag("--markdown", a->markdown, "With --list: as the Markdown tables of docs/gate.md");
  c->add_option("--check", a->check, "Run only this check (an id of the report: GT2.matmul.rows, GT4.E1_PropEvictEqualsNever.Requests ...)")
      ->check(nonempty());
  c->add_option("--check-timeout", a->check_timeout_s, "Seconds one check may run before its process is killed and the check fails")
      ->capture_default_str()
      ->check(decimal(1, 86400));
  c->add_flag("--in-process", a->in_process,
              "Load the library and run the checks in this process, not one process each: a crash or hang of the library then ends the gate (for a debugger)");
  // A child of the gate (gate/gate_isolate.hpp); not for users, so not in --help.
  c->add_option("--report-fd", a->report_fd, "The gate's child: the fd of its report")->group("")->check(decimal(3, 1023));
  c->add_flag("--describe", a->describe, "The gate's child: load the library and report its name and ops")->group("");
  c->footer("The end-to-end checks (GT4) vary threads too: each backend of a case draws 1..3 threads when the table has "
            "set_threads, so a case may compare an evicted run at 1 thread with a never-shown one at 3.\n\nThe checks:\n" +
            gate::check_list_text() + "\nExit codes:\n" + gate::exit_codes_text());
  return {c, [a] { return run_gate_cmd(*a); }};
}

}  // namespace akv::cli
