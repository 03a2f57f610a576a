// akv gate --kernels LIB.so [--ops LIST] [--cases N] [--seed S] [--model M] [--json] [--out DIR]
//          [--check ID] [--check-timeout S] [--in-process]
// The regression gate for anyone's kernels (spec/gate.md): loads a kernel library of the ABI
// in include/akv/kernels.h, checks every op it provides for invariance (GT2) and accuracy
// (GT3), then the composed model end to end (GT4). A failure prints the property, the
// RapidCheck reproduce string and the shrunk counterexample's file. Each check runs in a
// process of its own (cli/gate_isolate.hpp), so a library that crashes or hangs fails that
// check and the rest still run. Exit 0 every check passed, 1 one failed (or nothing was
// checked), 2 bad input or a bad library.
#include <fmt/format.h>

#include <chrono>
#include <iostream>
#include <memory>
#include <sstream>

#include "cli/commands.hpp"
#include "cli/gate_isolate.hpp"
#include "cli/options.hpp"
#include "optimized/composed/plugin.hpp"
#include "reference/error.hpp"
#include "verify/gate/gate.hpp"
#include "verify/models.hpp"

namespace akv::cli {

namespace {

struct GateArgs {
  std::string kernels;
  std::string ops;
  gate::Options opt;
  std::string check;       // one check's id: run only it
  int check_timeout_s = 600;
  bool in_process = false;  // every check in this process (no isolation)
  bool seed_set = false;
  bool json = false;
};

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

// The arguments that run the same gate as `a`, less --check, --in-process and --json.
std::vector<std::string> same_gate(const GateArgs& a) {
  std::vector<std::string> v{"gate", "--kernels", a.kernels, "--cases", std::to_string(a.opt.cases), "--seed",
                             std::to_string(a.opt.seed), "--model", a.opt.model, "--out", a.opt.out};
  if (!a.ops.empty()) v.insert(v.end(), {"--ops", a.ops});
  return v;
}

std::string shell_words(const std::vector<std::string>& v) {
  std::string s = "akv";
  for (const auto& w : v) {
    const bool plain = !w.empty() && w.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./,=:+") == std::string::npos;
    s += " " + (plain ? w : "'" + w + "'");  // a path with a quote in it prints as is
  }
  return s;
}

int run_gate_cmd(GateArgs& a) {
  const uint32_t select = parse_ops(a.ops);
  const auto ops = load_kernels(a.kernels, select);
  const uint32_t provided = ops->plugin().provides;
  if (!a.ops.empty() && (select & ~provided))
    throw Error(ErrorCode::kBadInput, "--ops: " + a.kernels + " does not provide " + op_list(select & ~provided) +
                                          " (it provides " + op_list(provided) + ")");
  if (ops->own() == 0)
    throw Error(ErrorCode::kBadKernels, a.kernels + ": provides none of the ops to check (provides: " + op_list(provided) + ")");
  if (!a.check.empty()) gate::describe_check(a.check);  // an unknown id is exit 2 before any check runs
  // A bad --model is exit 2 before any check runs; a child running one op check needs no model.
  if (!(a.in_process && !a.check.empty() && a.check.rfind("GT4.", 0) != 0)) load_model(a.opt.model);
  if (!a.seed_set) a.opt.seed = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  if (!a.json)
    std::cout << fmt::format("akv gate: {} ({}), ops {}, {} cases per property, model {}, seed {}\n", a.kernels, ops->name(),
                             op_list(ops->own()), a.opt.cases, a.opt.model, a.opt.seed)
              << std::flush;
  auto line = [&](const gate::Check& c) {
    if (a.json) return;
    const std::string tag = c.result == "pass" ? "PASS" : c.result == "fail" ? "FAIL" : "SKIP";
    std::cout << fmt::format("{} {:<44} {}\n", tag, c.property,
                             c.result == "skipped" ? c.message : fmt::format("{} cases", c.cases));
    if (c.result != "fail") return;
    std::cout << "  " << c.message << "\n";
    if (c.first_failure) std::cout << fmt::format("  first failing case: {}\n", c.first_failure);
    if (!c.reproduce.empty()) std::cout << fmt::format("  reproduce: RC_PARAMS=\"{}\"\n", c.reproduce);
    if (!c.counterexample.empty())
      std::cout << fmt::format("  counterexample: {} ({} bytes; {})\n", c.counterexample, c.counterexample_bytes, c.counterexample_shape);
    std::cout << std::flush;
  };
  std::vector<gate::Check> checks;
  auto in_child = [&](const std::string& id) {
    std::vector<std::string> args = same_gate(a);
    args.insert(args.end(), {"--check", id});
    std::vector<std::string> child = args;
    child.insert(child.end(), {"--json", "--in-process"});
    args.push_back("--in-process");
    return run_check_in_child(child, gate::describe_check(id), a.check_timeout_s, shell_words(args));
  };
  if (!a.check.empty()) {
    checks.push_back(a.in_process ? gate::run_check(a.check, ops, a.opt) : in_child(a.check));
    line(checks.back());
  } else if (a.in_process) {
    checks = gate::run_gate(ops, a.opt, line);
  } else {
    for (const std::string& id : gate::check_ids()) {
      checks.push_back(in_child(id));
      line(checks.back());
    }
  }
  // One check (--check): its own result; the whole gate: gate::verdict (never vacuous).
  const int code = !a.check.empty() ? (checks.back().result == "pass" ? 0 : 1) : gate::verdict(checks, ops->own());
  int passed = 0, failed = 0, skipped = 0;
  for (const auto& c : checks) (c.result == "pass" ? passed : c.result == "fail" ? failed : skipped)++;
  if (a.json) {
    nlohmann::json j{{"kernels", a.kernels}, {"name", ops->name()}, {"abi_version", AKV_KERNELS_ABI_VERSION},
                     {"provides", op_list(provided)}, {"checked_ops", op_list(ops->own())}, {"model", a.opt.model},
                     {"seed", a.opt.seed}, {"cases", a.opt.cases}, {"verdict", code == 0 ? "pass" : "fail"},
                     {"checks", nlohmann::json::array()}};
    for (const auto& c : checks) j["checks"].push_back(gate::to_json(c));
    print_json(j);
  } else {
    std::cout << fmt::format("akv gate: {}: {} passed, {} failed, {} skipped\n", code == 0 ? "PASS" : "FAIL", passed, failed, skipped);
    if (code != 0 && failed == 0)
      std::cout << (a.check.empty() ? "akv gate: a provided op was checked by no property: not a pass\n"
                                    : "akv gate: the check did not run (skipped): not a pass\n");
  }
  return code;
}

}  // namespace

Command add_gate(CLI::App& app) {
  auto a = std::make_shared<GateArgs>();
  auto* c = app.add_subcommand("gate", "Check a kernel library (include/akv/kernels.h): per-op invariance and accuracy, then E1 and I1 through the composed model");
  c->add_option("--kernels", a->kernels, "The kernel library (a shared object exporting akv_get_kernels)")->required()->check(nonempty());
  c->add_option("--ops", a->ops, "Ops to take from the library, comma-separated: matmul, rmsnorm, rope, attention, swiglu, add, evict (default: all it provides; the rest run on the reference)")
      ->check(nonempty());
  c->add_option("--cases", a->opt.cases, "RapidCheck cases per property")->capture_default_str()->check(decimal(1, 1000000));
  c->add_option("--seed", a->opt.seed, "RapidCheck seed (default: from the clock; printed)")
      ->check(decimal(0, UINT64_MAX))
      ->each([a](const std::string&) { a->seed_set = true; });
  c->add_option("--model", a->opt.model, "The end-to-end checks' model: " + names_help(model_forms()))->capture_default_str()->check(nonempty());
  c->add_option("--out", a->opt.out, "Directory for counterexample files")->capture_default_str()->check(nonempty());
  c->add_flag("--json", a->json, "Print the verdict and every check as JSON");
  c->add_option("--check", a->check, "Run only this check (an id of the report: GT2.matmul.rows, GT4.E1_PropEvictEqualsNever.Requests ...)")
      ->check(nonempty());
  c->add_option("--check-timeout", a->check_timeout_s, "Seconds one check may run before its process is killed and the check fails")
      ->capture_default_str()
      ->check(decimal(1, 86400));
  c->add_flag("--in-process", a->in_process,
              "Run the checks in this process, not one process each: a crash or hang of the library then ends the gate (for a debugger)");
  return {c, [a] { return run_gate_cmd(*a); }};
}

}  // namespace akv::cli
