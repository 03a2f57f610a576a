#include "gate/gate.hpp"

#include <fmt/format.h>
#include <rapidcheck.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <optional>
#include <fstream>
#include <sstream>

#include "optimized/composed/composed_backend.hpp"
#include "reference/error.hpp"
#include "gate/c_snippet.hpp"
#include "gate/environment.hpp"
#include "gate/message.hpp"
#include "verify/check/op_props.hpp"
#include "verify/check/rc_runner.hpp"
#include "runtime/models.hpp"
#include "verify/props/counterexample.hpp"
#include "verify/props/harness.hpp"

namespace akv::gate {

namespace {

rc::detail::TestParams params(const Options& o, int cases) {
  rc::detail::TestParams p;
  p.seed = o.seed;
  p.maxSuccess = cases;
  return p;
}

using check::OpProperty;
using check::ReproduceMap;
constexpr double kNoBudget = std::numeric_limits<double>::infinity();

// A check's time budget (GT5): past `seconds` a new case returns at once and is not counted;
// after a failure, shrinking goes on for `seconds` more, then every candidate returns at once
// (RapidCheck keeps the smallest failing case found so far).
class Budget {
 public:
  explicit Budget(double seconds) : s_(seconds), t0_(std::chrono::steady_clock::now()) {}
  // Runs one case of `body` within the budget.
  template <class F>
  void run(F&& body) {
    const double t = elapsed();
    if (!failed_ && t > s_) return void(stopped_ = true);
    if (failed_ && t > failed_at_ + s_) return void(shrink_stopped_ = true);
    check::on_case_failure(body, [this] { fail(); });
    if (!failed_) ++ran_;
  }
  int ran() const { return ran_; }
  bool stopped() const { return stopped_; }
  bool shrink_stopped() const { return shrink_stopped_; }
  double elapsed() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count(); }

 private:
  void fail() {
    if (!failed_) failed_ = true, failed_at_ = elapsed();
  }
  double s_;
  std::chrono::steady_clock::time_point t0_;
  bool failed_ = false, stopped_ = false, shrink_stopped_ = false;
  double failed_at_ = 0;
  int ran_ = 0;
};

// A passing run's verdict: pass over >= 1 case, all asked for unless the budget stopped it.
void passed(Check& c, int ran, bool stopped, double budget_s) {
  c.cases = ran;
  c.budget_stopped = stopped;
  if (c.cases == 0) {
    c.result = "fail";
    c.message = fmt::format("no case ran within the time budget of {:g} s (--budget): nothing was checked, not a pass", budget_s);
  } else if (c.cases < c.target_cases && !stopped) {
    c.result = "fail";
    c.message = "ran " + std::to_string(c.cases) + " cases of " + std::to_string(c.target_cases);
  } else {
    c.result = "pass";
    if (stopped)
      c.message = fmt::format("stopped at the time budget ({:g} s, --budget) after {} of {} cases", budget_s, c.cases, c.target_cases);
  }
}

// The rerun verdict of a failure: "the shrunk case failed again in 3 of 5 reruns (flaky ...)".
std::string rerun_note(const Check& c, bool replay) {
  if (c.reruns == 0) return "";
  std::string s = fmt::format("\n  {} in {} of {} {}", replay ? "reproduced" : "the shrunk case failed again", c.reproduced,
                              c.reruns, replay ? "replays" : "reruns");
  if (c.reproduced < c.reruns)
    s += ": FLAKY, the same inputs do not always fail (a thread schedule, a combine order or uninitialised memory?)";
  return s;
}

// A replay that passed every time: said plainly, with this run's environment to compare.
std::string no_reproduce(int runs, const nlohmann::json& env) {
  return fmt::format("did not reproduce: RC_PARAMS replayed the failing case {} times and it passed every time. The kernel is "
                     "fixed, or the failure depends on what differs from the failing run: compare its environment (the "
                     "report's cpu/env line, the counterexample file's \"environment\") with this one: {}",
                     runs, environment_line(env));
}

// A replay (RC_PARAMS reproduce=): the one case o.reruns times, so that a flaky failure shows as
// some of them. Returns the first failing run; when none failed, fills `c` as a pass that did
// not reproduce and returns nullopt.
template <class Run, class Fails>
auto replay_case(Check& c, const Options& o, Run&& run, Fails&& fails) -> std::optional<decltype(run())> {
  std::optional<decltype(run())> first;
  int failed = 0, runs = 0;
  for (; runs < std::max(o.reruns, 1); ++runs) {
    auto again = run();
    if (fails(again) && failed++ == 0) first = std::move(again);
  }
  c.reruns = runs, c.reproduced = failed;
  if (failed == 0) {
    c.result = "pass";
    c.cases = 1;
    c.message = no_reproduce(runs, o.environment);
  }
  return first;
}

// "<out>/<name>" with `body`, written to a file of this process's and renamed into
// place (two gates sharing --out never leave a torn file); the path and its size go into c.
std::string write_out(const Options& o, const std::string& name, const std::string& body) {
  std::error_code ec;
  std::filesystem::create_directories(o.out, ec);
  const std::string path = (std::filesystem::path(o.out) / name).string();
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  std::ofstream f(tmp, std::ios::binary);
  f << body;
  f.close();
  if (!f || std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw Error(ErrorCode::kBadInput, "--out: cannot write " + path);
  }
  return path;
}
// "<out>/<property>.json": the counterexample; its path and size go into c.
void write_file(Check& c, const Options& o, const std::string& body) {
  c.counterexample = write_out(o, c.property + ".json", body);
  c.counterexample_bytes = static_cast<long>(body.size());
}

// The registry's properties the gate runs (op_props.hpp: the GT2 and GT3 ones), in its order.
const std::vector<const OpProperty*>& gate_properties() {
  static const std::vector<const OpProperty*> all = [] {
    std::vector<const OpProperty*> v;
    for (const OpProperty& p : check::op_properties())
      if (p.gate) v.push_back(&p);
    return v;
  }();
  return all;
}

// A check before it runs: id, op, kind and summary (run_op, run_e2e and describe_check).
// Members set one by one: GCC 12 warns on aggregate (even designated) initialisers that leave
// members to their defaults (-Wmissing-field-initializers).
Check skeleton(std::string property, std::string op, std::string kind, std::string summary) {
  Check c;
  c.property = std::move(property);
  c.op = std::move(op);
  c.kind = std::move(kind);
  c.summary = std::move(summary);
  return c;
}
Check op_skeleton(const OpProperty& p) { return skeleton(p.id, op_list(p.op), p.kind, p.summary); }
Check e2e_skeleton(const std::string& id, const prop::PropertyDef& def) {
  return skeleton("GT4." + id, "model", "end-to-end", def.summary);
}

// One RapidCheck run of an op property: its result and the inputs of its last failing case.
struct OpRun {
  check::RcResult result;
  nlohmann::json failed_case;
  std::string failed_shape;
  int ran = 0;
  bool stopped = false;
};

OpRun run_op_once(const OpProperty& p, const check::OpTable& t, const Options& o, const ReproduceMap& replay, double budget_s) {
  OpRun r;
  Budget budget(budget_s);
  check::RcProperty rp{.id = p.id,  // the check's id alone: a replay on a new build of the library (another name) still applies
                       .description = p.summary,
                       .params = params(o, o.cases),
                       .listener = &check::quiet_listener(),  // the gate reports through its own Check lines
                       .replay = &replay,
                       .around = [&](const std::function<void()>& body) {
                         check::note_op_case(nullptr, "");
                         budget.run(body);
                       }};
  r.result = check::run_rc(rp, [&] {
    check::on_case_failure([&] { p.body(t); }, [&] { r.failed_case = check::noted_case(), r.failed_shape = check::noted_shape(); });
  });
  r.ran = budget.ran();
  r.stopped = budget.stopped();
  return r;
}

// The library's table viewed as an op table (ops.hpp): its attention held to any conforming
// kernel's B14 counts.
Check run_op(const OpProperty& p, const check::OpTable& t, const Options& o) {
  const OpSet& s = *t.set;
  const auto t0 = std::chrono::steady_clock::now();
  Check c = op_skeleton(p);
  c.target_cases = o.cases;
  if (!(s.own() & p.op)) {
    c.result = "skipped";
    c.message = "served by the reference: the library does not provide it, or --ops left it out";
    return c;
  }
  if (const std::string why = p.applies(t); !why.empty()) {
    c.result = "skipped";
    c.message = why;
    return c;
  }
  const std::string id = p.id;
  const ReproduceMap& configured = check::configured_replay();
  const bool replay = configured.count(id) > 0;
  auto seconds = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  OpRun r;
  if (replay) {
    auto first = replay_case(c, o, [&] { return run_op_once(p, t, o, configured, kNoBudget); },
                             [](const OpRun& x) { return x.result.failed; });
    if (!first) {
      c.seconds = seconds();
      return c;
    }
    r = std::move(*first);
  } else {
    r = run_op_once(p, t, o, configured, o.budget_s);
  }
  if (r.result.passed) {
    passed(c, r.ran, r.stopped, o.budget_s);
    c.seconds = seconds();
    return c;
  }
  c.result = "fail";
  c.message = lead_with_failure(r.result.message);
  if (r.result.failed) {
    c.cases = replay ? 0 : r.result.cases;
    c.first_failure = c.cases + 1;
    c.message = lead_with_failure(r.result.description);
    c.reproduce = r.result.reproduce;
    c.counterexample_shape = r.failed_shape;
    nlohmann::json file{{"akv_gate_counterexample",
                         {{"property", p.id}, {"summary", p.summary}, {"kernels", s.source()}, {"op", c.op},
                          {"message", c.message}, {"rc_params", c.reproduce}, {"shape", r.failed_shape},
                          {"environment", o.environment}}},
                        {"case", r.failed_case}};
    write_file(c, o, file.dump(1) + "\n");
    if (const std::string snippet = c_snippet(p.id, p.summary, c.message, c.reproduce, r.failed_case); !snippet.empty())
      c.c_snippet = write_out(o, c.property + ".c", snippet);
    if (!replay) {  // the shrunk case again: does it always fail?
      for (; c.reruns < o.reruns && seconds() < 3 * o.budget_s; ++c.reruns)
        if (run_op_once(p, t, o, r.result.failing, kNoBudget).result.failed) ++c.reproduced;
    }
    c.message += rerun_note(c, replay);
  }
  c.seconds = seconds();
  return c;
}

// The end-to-end properties (GT4), run on the composed model over the table.
const char* const kEndToEnd[] = {"E1_PropEvictEqualsNever.Requests", "E1_PropEvictEqualsNever.OneAtATimeAnyOrder",
                                 "I1_PropInvariance.Chunkings", "I1_PropInvariance.PoisonedScratch"};

// The witness arguments of a counterexample file, less --backend and --isa (--kernels replaces them).
std::string without_backend(const std::string& args) {
  std::istringstream in(args);
  std::string w, out;
  while (in >> w) {
    if (w == "--backend" || w == "--isa") {
      in >> w;
      continue;
    }
    out += (out.empty() ? "" : " ") + w;
  }
  return out;
}

gen::Profile gate_profile(const Options& o) {
  gen::Profile p = gen::ci_profile();
  p.name = "gate";
  p.model = o.model;
  p.vocab = load_model(o.model).model->config.vocab;
  p.max_spans = 8;
  p.max_span_len = 48;
  p.max_total = static_cast<size_t>(o.e2e_tokens);
  p.small_per_mille = 0;
  p.shape_per_mille = 0;
  p.max_commands = 8;
  p.state_max_total = static_cast<size_t>(o.e2e_tokens);
  p.max_threads = 3;  // the end-to-end checks vary threads too: each backend of a case draws 1..3
  return p;
}

// The threads of the case's never-shown backend when they differ from the first backend's: the
// witness's second configuration (--cross-threads) then replays the mix the case ran.
std::string cross_threads_arg(const prop::Counterexample& ce) {
  if (ce.backends.size() < 2) return "";
  const int first = ce.backends.front().threads, never = ce.backends.back().threads;
  return first > 0 && never > 0 && never != first ? " --cross-threads " + std::to_string(never) : "";
}

Check run_e2e(const std::string& id, std::shared_ptr<const OpSet> s, const Options& o) {
  const auto t0 = std::chrono::steady_clock::now();
  auto seconds = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  const prop::PropertyDef* def = prop::find_property(id);
  if (def == nullptr) throw Error(ErrorCode::kBadInput, "gate: no property " + id);
  Check c = e2e_skeleton(id, *def);
  const int cases = e2e_cases(o);
  c.target_cases = cases;
  prop::Context ctx;
  ctx.backend = "gate";
  ctx.profile = gate_profile(o);
  ctx.knobs = gen::BackendKnobs{s->has_threads(), {}};
  if (o.kv_type != KvType::kF32) ctx.kv_types = {o.kv_type};  // every session of every case that type (S5)
  ctx.factory = [s](std::shared_ptr<const Model> m, const BackendOptions& bo) {
    ComposedOptions co;
    co.name = "gate";
    co.threads = bo.threads;
    return make_composed_backend(std::move(m), s, co);
  };
  const bool replay = check::configured_replay().count(prop::rc_id(*def, ctx.backend)) > 0;
  // The property with its cases under a budget (none for a replay).
  auto b = std::make_shared<Budget>(0.0);  // the budget of the last run
  auto once = [&](const std::string& reproduce, double budget_s) {
    b = std::make_shared<Budget>(budget_s);
    prop::PropertyDef within = *def;
    within.body = [budget = b, body = def->body](const prop::Context& x) { budget->run([&] { body(x); }); };
    return prop::run_property(within, ctx, params(o, cases), &check::quiet_listener(), reproduce);
  };
  prop::Outcome out;
  if (replay) {
    auto first = replay_case(c, o, [&] { return once("", kNoBudget); }, [](const prop::Outcome& x) { return !x.passed; });
    if (!first) {
      c.seconds = seconds();
      return c;
    }
    out = std::move(*first);
  } else {
    out = once("", o.budget_s);
  }
  if (out.passed) {
    passed(c, b->ran(), b->stopped(), o.budget_s);
    c.seconds = seconds();
    return c;
  }
  c.result = "fail";
  c.message = lead_with_failure(out.message);
  c.cases = replay ? 0 : b->ran();
  c.first_failure = c.cases + 1;
  c.reproduce = out.reproduce;
  std::string rerun;
  if (out.counterexample) {
    const size_t tokens = out.counterexample->conv.total_tokens();
    c.counterexample_shape = std::to_string(out.counterexample->conv.spans.size()) + " spans, " + std::to_string(tokens) + " tokens";
    const prop::CounterexampleFile f = prop::counterexample_file(*out.counterexample, id, "cpu", out.reproduce);
    // The case ran on the library's ops: the file says so, and how the witness re-runs it.
    nlohmann::json j = nlohmann::json::parse(f.json);  // our own text, just written
    // The witness args carry --kv-type from the case (counterexample_file).
    const std::string args = without_backend(f.witness_args) + cross_threads_arg(*out.counterexample) + " --kernels " + s->source();
    j["akv_counterexample"]["backend"] = "kernels";
    j["akv_counterexample"]["kernels"] = s->source();
    j["akv_counterexample"]["witness_args"] = args;
    j["akv_counterexample"]["environment"] = o.environment;
    write_file(c, o, j.dump(1) + "\n");
    if (f.witness_applies) rerun = "\n  re-run: " + env_prefix(o.environment["env"]) + "akv witness " + shell_word(c.counterexample) + " " + args;
  }
  if (!replay && out.reproduce.rfind("reproduce=", 0) == 0)  // the shrunk case again: does it always fail?
    for (; c.reruns < o.reruns && seconds() < 3 * o.budget_s; ++c.reruns)
      if (!once(out.reproduce.substr(10), kNoBudget).passed) ++c.reproduced;
  c.message += rerun + rerun_note(c, replay);
  c.seconds = seconds();
  return c;
}

}  // namespace

std::vector<Check> run_gate(std::shared_ptr<const OpSet> ops, const Options& o, const std::function<void(const Check&)>& progress) {
  if (o.cases < 1) throw Error(ErrorCode::kBadInput, "--cases must be >= 1");
  std::vector<Check> out;
  auto add = [&](Check c) {
    if (progress) progress(c);
    out.push_back(std::move(c));
  };
  const check::OpTable t = check::plugin_op_table(ops);
  for (const OpProperty* p : gate_properties()) add(run_op(*p, t, o));
  if (ops->has_threads()) ops->set_threads(1);
  for (const char* id : kEndToEnd) add(run_e2e(id, ops, o));
  return out;
}

std::string replay_key(const std::string& property) {
  (void)describe_check(property);  // an unknown id is Error(kBadInput)
  if (property.rfind("GT4.", 0) != 0) return property;
  const prop::PropertyDef* def = prop::find_property(property.substr(4));
  return prop::rc_id(*def, "gate");
}

std::vector<std::string> replay_keys() {
  std::vector<std::string> keys;
  for (const auto& [k, r] : check::configured_replay()) keys.push_back(k);
  return keys;
}

int e2e_cases(const Options& o) { return o.e2e_cases > 0 ? o.e2e_cases : std::max(1, o.cases / 5); }

std::vector<std::string> check_ids() {
  std::vector<std::string> ids;
  for (const OpProperty* p : gate_properties()) ids.push_back(p->id);
  for (const char* id : kEndToEnd) ids.push_back(std::string("GT4.") + id);
  return ids;
}

namespace {
[[noreturn]] void no_such_check(const std::string& property) {
  std::string known;
  for (const auto& id : check_ids()) known += " " + id;
  throw Error(ErrorCode::kBadInput, "no gate check '" + property + "'; the checks:" + known);
}

}  // namespace

Check run_check(const std::string& property, std::shared_ptr<const OpSet> ops, const Options& o) {
  if (o.cases < 1) throw Error(ErrorCode::kBadInput, "--cases must be >= 1");
  for (const OpProperty* p : gate_properties())
    if (p->id == property) return run_op(*p, check::plugin_op_table(ops), o);
  for (const char* id : kEndToEnd)
    if (property == std::string("GT4.") + id) {
      if (ops->has_threads()) ops->set_threads(1);  // as run_gate: the end-to-end draws set their own
      return run_e2e(id, ops, o);
    }
  no_such_check(property);
}

Check describe_check(const std::string& property) {
  for (const OpProperty* p : gate_properties())
    if (p->id == property) return op_skeleton(*p);
  for (const char* id : kEndToEnd)
    if (property == std::string("GT4.") + id) {
      const prop::PropertyDef* def = prop::find_property(id);
      if (def == nullptr) throw Error(ErrorCode::kBadInput, "gate: no property " + std::string(id));
      return e2e_skeleton(id, *def);
    }
  no_such_check(property);
}

nlohmann::json to_json(const Check& c) {
  return {{"property", c.property}, {"op", c.op}, {"kind", c.kind}, {"summary", c.summary}, {"result", c.result},
          {"message", c.message}, {"cases", c.cases}, {"first_failure_case", c.first_failure}, {"reproduce", c.reproduce},
          {"counterexample", c.counterexample}, {"counterexample_bytes", c.counterexample_bytes},
          {"counterexample_shape", c.counterexample_shape}, {"c_snippet", c.c_snippet}, {"target_cases", c.target_cases},
          {"budget_stopped", c.budget_stopped}, {"reruns", c.reruns}, {"reproduced", c.reproduced}, {"seconds", c.seconds}};
}

Check check_from_json(const nlohmann::json& j) {
  auto str = [&](const char* k) -> std::string {
    if (!j.is_object() || !j.contains(k) || !j[k].is_string()) throw Error(ErrorCode::kBadInput, std::string("gate check report: no string '") + k + "'");
    return j[k].get<std::string>();
  };
  auto num = [&](const char* k) -> long {
    if (!j.is_object() || !j.contains(k) || !j[k].is_number_integer()) throw Error(ErrorCode::kBadInput, std::string("gate check report: no integer '") + k + "'");
    return j[k].get<long>();
  };
  Check c = skeleton(str("property"), str("op"), str("kind"), str("summary"));
  c.result = str("result");
  c.message = str("message");
  c.cases = static_cast<int>(num("cases"));
  c.first_failure = static_cast<int>(num("first_failure_case"));
  c.reproduce = str("reproduce");
  c.counterexample = str("counterexample");
  c.counterexample_bytes = num("counterexample_bytes");
  c.counterexample_shape = str("counterexample_shape");
  c.c_snippet = str("c_snippet");
  c.target_cases = static_cast<int>(num("target_cases"));
  if (!j.contains("budget_stopped") || !j["budget_stopped"].is_boolean()) throw Error(ErrorCode::kBadInput, "gate check report: no boolean 'budget_stopped'");
  c.budget_stopped = j["budget_stopped"].get<bool>();
  c.reruns = static_cast<int>(num("reruns"));
  c.reproduced = static_cast<int>(num("reproduced"));
  if (!j.contains("seconds") || !j["seconds"].is_number()) throw Error(ErrorCode::kBadInput, "gate check report: no number 'seconds'");
  c.seconds = j["seconds"].get<double>();
  return c;
}

int verdict(const std::vector<Check>& checks, uint32_t provided) {
  uint32_t checked = 0;
  bool e2e = false;
  for (const Check& c : checks) {
    if (c.result == "fail") return 1;
    if (c.result != "pass") continue;
    if (c.op == "model") e2e = true;
    else checked |= op_bit(c.op);
  }
  // Every provided op checked by at least one property (evict by the end-to-end ones).
  const uint32_t need = provided & ~AKV_OP_EVICT;
  return (checked & need) == need && e2e ? 0 : 1;
}

}  // namespace akv::gate
