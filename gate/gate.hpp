// `akv gate` (spec/gate.md GT2-GT5): a kernel table's ops checked for invariance (GT2) and
// accuracy (GT3) per op, then the composed model end to end (GT4), each as a RapidCheck
// property whose failure keeps the reproduce string and a shrunk counterexample file.
#pragma once
#include "reference/kv_types.hpp"
#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "optimized/composed/op_set.hpp"

namespace akv::gate {

struct Options {
  int cases = 100;            // RapidCheck cases per property (>= 1)
  uint64_t seed = 0;          // RapidCheck seed (reproducible runs)
  std::string model = "tiny"; // the end-to-end checks' model (runtime/models.hpp names)
  std::string out = "gate-counterexamples";  // counterexample files go here
  int e2e_tokens = 96;        // tokens per end-to-end conversation at most
  int e2e_cases = 0;          // cases per end-to-end property; 0: cases / 5, at least 1
  double budget_s = 20;       // seconds a check draws new cases; then it stops (and shrinks as long again)
  KvType kv_type = KvType::kF32;  // the end-to-end checks' cache type (spec/state.md S5): E1 and I1 within it
  int reruns = 5;             // a failing case is rerun so often to tell whether it is flaky
  nlohmann::json environment; // environment.hpp's record: written into every counterexample file
};

/// The cases an end-to-end property runs under `o` (e2e_cases, else cases / 5, at least 1).
int e2e_cases(const Options& o);

/// One property's verdict.
struct Check {
  std::string property;     // "GT2.matmul.rows", "GT4.E1.Requests" ...
  std::string op;           // "matmul" ... or "model"
  std::string kind;         // "invariance" | "accuracy" | "end-to-end"
  std::string summary;      // what it asserts, one line
  std::string result;       // "pass" | "fail" | "skipped"
  std::string message;      // failure: RapidCheck's message; skipped: why
  int cases = 0;            // cases run (passing ones; on failure those before the first failure)
  int first_failure = 0;    // 1-based case of the first failure; 0 when none
  std::string reproduce;    // RC_PARAMS value replaying the failure
  std::string counterexample;  // file written, "" when none
  long counterexample_bytes = 0;
  std::string counterexample_shape;  // "M=2 n=17 d=1", "3 spans, 41 tokens"
  std::string c_snippet;    // the op counterexample as C (c_snippet.hpp), "" when none
  int target_cases = 0;     // cases asked for; cases < target_cases when the budget stopped it
  bool budget_stopped = false;  // the time budget (Options::budget_s) ended the drawing of cases
  int reruns = 0, reproduced = 0;  // a failure's shrunk case rerun `reruns` times; it failed `reproduced` times
  double seconds = 0;       // wall time of the check
};

/// Every check in order: per provided op its invariance then accuracy properties, then the
/// end-to-end ones. `progress` (may be empty) is called after each check.
std::vector<Check> run_gate(std::shared_ptr<const OpSet> ops, const Options& opt,
                            const std::function<void(const Check&)>& progress);

/// The one check `property` (an op property id "GT2.matmul.rows" or "GT4.<suite>.<name>");
/// Error(kBadInput) naming the ids when there is none.
Check run_check(const std::string& property, std::shared_ptr<const OpSet> ops, const Options& opt);

/// The ids of every check run_gate runs, in order.
std::vector<std::string> check_ids();

/// The check `property` before it runs: its id, op, kind and summary, result "" (what a report
/// says of a check whose process died before it could report, gate/gate_isolate.hpp).
/// Error(kBadInput) naming the ids when there is none.
Check describe_check(const std::string& property);

/// The key of `property` in RC_PARAMS' reproduce map: its id ("GT2.matmul.rows"), or the
/// RapidCheck id of an end-to-end property. Error(kBadInput) for an unknown id.
std::string replay_key(const std::string& property);
/// The keys of RC_PARAMS' reproduce map (empty when it replays nothing).
std::vector<std::string> replay_keys();

/// A Check as the JSON of `akv gate --json` ("property", "op", ... "counterexample_shape"),
/// and back; check_from_json throws Error(kBadInput) naming a missing or mistyped key.
nlohmann::json to_json(const Check& c);
Check check_from_json(const nlohmann::json& j);

/// 0 when every check that applies passed and at least one ran per provided op; 1 otherwise.
int verdict(const std::vector<Check>& checks, uint32_t provided);

}  // namespace akv::gate
