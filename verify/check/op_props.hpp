// The per-op properties, written once for every op table (ops.hpp): the reference, the cpu
// kernels per ISA, cuda-emu and every plugin. Each draws op inputs with RapidCheck, notes them
// (note_op_case) and asserts. `akv gate` runs the GT2/GT3 ones on a kernel library
// (spec/gate.md); the GoogleTest suites run them on akv's own tables under each backend's
// clauses (K12, G11, B14, GT9). The fixed edge-case tables beside them are op_checks.hpp.
//
// How a property calls the table: an accuracy property through the OpTable's functions (so a
// test can break one op of an intact table); an invariance property through t.set, the C ABI
// table, for what only it has: threads, the caller's scratch, a weight prepared once for
// several calls.
#pragma once
#include <nlohmann/json.hpp>

#include <functional>
#include <string>
#include <vector>

#include "verify/check/ops.hpp"
#include "verify/check/report.hpp"

namespace akv::check {

struct OpProperty {
  std::string id;       // "GT2.matmul.rows"; "B10.matmul.reference" for a table-only one
  uint32_t op;          // its AKV_OP_* bits
  std::string kind;     // "invariance" | "accuracy"
  /// Whether `akv gate` runs it. The table-only ones (B9, B10) hold a table to the reference
  /// within B_ref + B_opt, with the table's own dot and declared rounding model (ops.hpp),
  /// which a plugin does not declare; the gate's GT3 holds a plugin to the exact value instead.
  bool gate;
  std::string summary;  // one line
  /// "" when it applies to `t`, else why not (no threads, no scratch ...).
  std::function<std::string(const OpTable& t)> applies;
  std::function<void(const OpTable& t)> body;
};

/// Every per-op property, ops in bit order, invariance before accuracy, the gate's first.
const std::vector<OpProperty>& op_properties();
/// The property with this id; Error(kBadInput) naming the known ids when there is none.
const OpProperty& op_property(const std::string& id);

/// Runs property `id` on t as a RapidCheck property of at least kMinCases cases (rc_runner.hpp),
/// named "<id>/<t.label>" (its reproduce-string key). The distances a bound property measured
/// go into the Report's observed lines; such a property whose distances were all zero fails,
/// since its cases showed no rounding. SKIPPED when it does not apply to t or t is unavailable.
Report run_op_property(const OpTable& t, const std::string& id);

/// Records the running case's inputs (the counterexample file's body when it fails).
void note_op_case(nlohmann::json c, std::string shape);
/// The case noted last, and its shape ("M=2 n=17 d=1").
const nlohmann::json& noted_case();
const std::string& noted_shape();

}  // namespace akv::check
