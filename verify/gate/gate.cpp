#include "verify/gate/gate.hpp"

#include <rapidcheck.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "optimized/composed/composed_backend.hpp"
#include "reference/error.hpp"
#include "verify/gate/op_props.hpp"
#include "verify/models.hpp"
#include "verify/props/counterexample.hpp"
#include "verify/props/harness.hpp"

namespace rc::detail {
std::string reproduceMapToString(const std::unordered_map<std::string, Reproduce>& reproduceMap);
}  // namespace rc::detail

namespace akv::gate {

namespace {

// The gate reports through its own Check lines, not RapidCheck's exit-time printout.
class Quiet final : public rc::detail::TestListener {
 public:
  void onTestCaseFinished(const rc::detail::CaseDescription&) override {}
  void onShrinkTried(const rc::detail::CaseDescription&, bool) override {}
  void onTestFinished(const rc::detail::TestMetadata&, const rc::detail::TestResult&) override {}
};

rc::detail::TestParams params(const Options& o) {
  rc::detail::TestParams p;
  p.seed = o.seed;
  p.maxSuccess = o.cases;
  return p;
}

// "<out>/<property>.json" with `body`, written to a file of this process's and renamed into
// place (two gates sharing --out never leave a torn file); the path and its size go into c.
void write_file(Check& c, const Options& o, const std::string& body) {
  std::error_code ec;
  std::filesystem::create_directories(o.out, ec);
  const std::string path = (std::filesystem::path(o.out) / (c.property + ".json")).string();
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  std::ofstream f(tmp, std::ios::binary);
  f << body;
  f.close();
  if (!f || std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw Error(ErrorCode::kBadInput, "--out: cannot write " + path);
  }
  c.counterexample = path;
  c.counterexample_bytes = static_cast<long>(body.size());
}

// A check before it runs: id, op, kind and summary (run_op, run_e2e and describe_check).
Check op_skeleton(const OpProperty& p) { return Check{p.id, op_list(p.op), p.kind, p.summary}; }
Check e2e_skeleton(const std::string& id, const prop::PropertyDef& def) {
  return Check{"GT4." + id, "model", "end-to-end", def.summary};
}

Check run_op(const OpProperty& p, const OpSet& s, const Options& o) {
  Check c = op_skeleton(p);
  if (!(s.own() & p.op)) {
    c.result = "skipped";
    c.message = "served by the reference: the library does not provide it, or --ops left it out";
    return c;
  }
  if (const std::string why = p.applies(s); !why.empty()) {
    c.result = "skipped";
    c.message = why;
    return c;
  }
  nlohmann::json failed_case;
  std::string failed_shape;
  auto testable = [&] {
    note_op_case(nullptr, "");
    try {
      p.body(s);
    } catch (const rc::detail::CaseResult& r) {
      if (r.type == rc::detail::CaseResult::Type::Failure) failed_case = noted_case(), failed_shape = noted_shape();
      throw;
    } catch (const rc::GenerationFailure&) {
      throw;
    } catch (...) {
      failed_case = noted_case(), failed_shape = noted_shape();
      throw;
    }
  };
  rc::detail::TestMetadata meta;
  meta.id = p.id + "/" + s.name();
  meta.description = p.summary;
  Quiet quiet;
  const auto result = rc::detail::checkProperty(rc::detail::toProperty(testable), meta, params(o), quiet,
                                                rc::detail::configuration().reproduce);
  if (result.is<rc::detail::SuccessResult>()) {
    c.cases = result.get<rc::detail::SuccessResult>().numSuccess;
    c.result = c.cases >= o.cases ? "pass" : "fail";
    if (c.result == "fail") c.message = "ran " + std::to_string(c.cases) + " cases of " + std::to_string(o.cases);
    return c;
  }
  c.result = "fail";
  std::ostringstream msg;
  rc::detail::printResultMessage(result, msg);
  c.message = msg.str();
  if (result.is<rc::detail::FailureResult>()) {
    const auto& f = result.get<rc::detail::FailureResult>();
    c.cases = f.numSuccess;
    c.first_failure = f.numSuccess + 1;
    c.message = f.description;
    c.reproduce = "reproduce=" + rc::detail::reproduceMapToString({{meta.id, f.reproduce}});
    c.counterexample_shape = failed_shape;
    nlohmann::json file{{"akv_gate_counterexample",
                         {{"property", p.id}, {"summary", p.summary}, {"kernels", s.source()}, {"op", c.op},
                          {"message", c.message}, {"rc_params", c.reproduce}, {"shape", failed_shape}}},
                        {"case", failed_case}};
    write_file(c, o, file.dump(1) + "\n");
  }
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
  p.max_threads = 3;
  return p;
}

Check run_e2e(const std::string& id, std::shared_ptr<const OpSet> s, const Options& o) {
  const prop::PropertyDef* def = prop::find_property(id);
  if (def == nullptr) throw Error(ErrorCode::kBadInput, "gate: no property " + id);
  Check c = e2e_skeleton(id, *def);
  prop::Context ctx;
  ctx.backend = "gate";
  ctx.profile = gate_profile(o);
  ctx.knobs = gen::BackendKnobs{s->has_threads(), {}};
  ctx.factory = [s](std::shared_ptr<const Model> m, const BackendOptions& bo) {
    ComposedOptions co;
    co.name = "gate";
    co.threads = bo.threads;
    return make_composed_backend(std::move(m), s, co);
  };
  Quiet quiet;
  const prop::Outcome out = prop::run_property(*def, ctx, params(o), &quiet);
  c.cases = out.cases;
  if (out.passed) {
    c.result = c.cases >= o.cases ? "pass" : "fail";
    if (c.result == "fail") c.message = "ran " + std::to_string(c.cases) + " cases of " + std::to_string(o.cases);
    return c;
  }
  c.result = "fail";
  c.message = out.message;
  c.first_failure = out.cases + 1;
  c.reproduce = out.reproduce;
  if (out.counterexample) {
    const size_t tokens = out.counterexample->conv.total_tokens();
    c.counterexample_shape = std::to_string(out.counterexample->conv.spans.size()) + " spans, " + std::to_string(tokens) + " tokens";
    const prop::CounterexampleFile f = prop::counterexample_file(*out.counterexample, id, "cpu", out.reproduce);
    // The case ran on the library's ops: the file says so, and how the witness re-runs it.
    nlohmann::json j = nlohmann::json::parse(f.json);
    const std::string args = without_backend(f.witness_args) + " --kernels " + s->source();
    j["akv_counterexample"]["backend"] = "kernels";
    j["akv_counterexample"]["kernels"] = s->source();
    j["akv_counterexample"]["witness_args"] = args;
    write_file(c, o, j.dump(1) + "\n");
    if (f.witness_applies) c.message += "\nre-run: akv witness " + c.counterexample + " " + args;
  }
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
  for (const OpProperty& p : op_properties()) add(run_op(p, *ops, o));
  if (ops->has_threads()) ops->set_threads(1);
  for (const char* id : kEndToEnd) add(run_e2e(id, ops, o));
  return out;
}

std::vector<std::string> check_ids() {
  std::vector<std::string> ids;
  for (const OpProperty& p : op_properties()) ids.push_back(p.id);
  for (const char* id : kEndToEnd) ids.push_back(std::string("GT4.") + id);
  return ids;
}

namespace {
[[noreturn]] void no_such_check(const std::string& property) {
  std::string known;
  for (const auto& id : check_ids()) known += " " + id;
  throw Error(ErrorCode::kBadInput, "no gate check '" + property + "'; the checks:" + known);
}

// RC_PARAMS="reproduce=..." replays one failing case; when it no longer fails, RapidCheck says
// so as an error, which for the replayed check is a pass of that one case.
Check replayed(Check c) {
  if (c.result == "fail" && c.message.find("Reproduced result is not a failure") != std::string::npos) {
    c.result = "pass";
    c.cases = 1;
    c.first_failure = 0;
    c.message = "RC_PARAMS replayed the failing case: it no longer fails";
  }
  return c;
}
}  // namespace

Check run_check(const std::string& property, std::shared_ptr<const OpSet> ops, const Options& o) {
  if (o.cases < 1) throw Error(ErrorCode::kBadInput, "--cases must be >= 1");
  for (const OpProperty& p : op_properties())
    if (p.id == property) return replayed(run_op(p, *ops, o));
  for (const char* id : kEndToEnd)
    if (property == std::string("GT4.") + id) {
      if (ops->has_threads()) ops->set_threads(1);  // as run_gate: the end-to-end draws set their own
      return replayed(run_e2e(id, ops, o));
    }
  no_such_check(property);
}

Check describe_check(const std::string& property) {
  for (const OpProperty& p : op_properties())
    if (p.id == property) return op_skeleton(p);
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
          {"counterexample_shape", c.counterexample_shape}};
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
  Check c{str("property"), str("op"), str("kind"), str("summary"), str("result"), str("message")};
  c.cases = static_cast<int>(num("cases"));
  c.first_failure = static_cast<int>(num("first_failure_case"));
  c.reproduce = str("reproduce");
  c.counterexample = str("counterexample");
  c.counterexample_bytes = num("counterexample_bytes");
  c.counterexample_shape = str("counterexample_shape");
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
