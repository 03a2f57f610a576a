// The per-op properties of the gate (spec/gate.md GT2, GT3), written over an OpSet: each
// draws op inputs with RapidCheck, notes them (note_op_case) and asserts.
#pragma once
#include <nlohmann/json.hpp>

#include <functional>
#include <string>
#include <vector>

#include "optimized/composed/op_set.hpp"

namespace akv::gate {

struct OpProperty {
  std::string id;       // "GT2.matmul.rows"
  uint32_t op;          // its AKV_OP_* bit
  std::string kind;     // "invariance" | "accuracy"
  std::string summary;  // one line
  /// "" when it applies to `s`, else why not (no threads, no scratch ...).
  std::function<std::string(const OpSet& s)> applies;
  std::function<void(const OpSet& s)> body;
};

/// Every per-op property, ops in bit order, invariance before accuracy.
const std::vector<OpProperty>& op_properties();

/// Records the running case's inputs (the counterexample file's body when it fails).
void note_op_case(nlohmann::json c, std::string shape);
/// The case noted last, and its shape ("M=2 n=17 d=1").
const nlohmann::json& noted_case();
const std::string& noted_shape();

}  // namespace akv::gate
