// Where a golden digest fails, which op and which ISA first differ (spec/kernels-cpu.md K14).
// A digest says only that some bit changed; this replays the forward pass op step by op step
// on the portable table and on each other table and names the first step that differs.
#pragma once
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "optimized/cpu/kernels.hpp"
#include "reference/model.hpp"

namespace akv::cpu {

/// A kernel table to check against portable, under the name a report gives it.
struct NamedKernels {
  std::string name;
  const Kernels* kernels;
};

/// Every ISA this CPU runs except portable, by isa_name.
std::vector<NamedKernels> supported_tables();

/// The first op step where one table's output differs bitwise from portable's.
struct Divergence {
  std::string table;  // NamedKernels::name
  std::string op;     // OpStep::op, e.g. "rope (q, k)"
  int step = 0;       // index of the op step in the forward pass (0 = layer 0's first RMSNorm)
  int layer = 0;      // -1: the final RMSNorm and the classifier
  int row = 0;        // token row of the call
  int index = 0;      // element within the row
  float got = 0, want = 0;  // the table's value, portable's value
};

struct Localisation {
  std::vector<Divergence> found;  // one per differing table, earliest step first
  size_t steps = 0;               // op steps compared per table
  std::vector<std::string> tables;
};

/// Runs `tokens` (1..max_ctx, each < vocab) in one forward call on a fresh cache with the
/// portable table and with each of `tables` (one thread, no scratch poison needed: outputs
/// only) and compares every op step's output bit for bit with portable's. Each step sees the
/// inputs its own table produced, so the first differing step of a table is the first op
/// whose bits that table changes. Throws Error(kBadInput) for an empty or out-of-range token.
Localisation localise(std::shared_ptr<const Model> model, std::span<const Token> tokens,
                      const std::vector<NamedKernels>& tables);

/// The first op step whose output holds a NaN or an Inf (spec/arithmetic.md A5).
struct NonFiniteStep {
  std::string op;   // OpStep::op
  int step = 0;     // op step index (0 = layer 0's first RMSNorm)
  int layer = 0;    // -1: the final RMSNorm and the classifier
  int row = 0;      // token row of the call (= position: the replay starts at 0)
  int index = 0;    // element within the row
  float value = 0;  // the non-finite value
};

/// Replays `tokens` (1..max_ctx, each < vocab) from position 0 in one forward call with the
/// table `k` (one thread) and returns the first op step whose output is not finite, or nothing
/// when every step is finite. An embedding row that is not finite shows as layer 0's first
/// RMSNorm. Throws Error(kBadInput) for an empty or out-of-range token list. Memory: the
/// call's scratch and tokens x vocab logits.
std::optional<NonFiniteStep> first_non_finite_step(std::shared_ptr<const Model> model, std::span<const Token> tokens,
                                                   const Kernels& k);

/// "layer 3, matmul (wq, wk, wv), row 17 (position 17), index 5: nan" for a report.
std::string describe_non_finite(const NonFiniteStep& s);

/// One paragraph for a test failure: the earliest divergence (op, layer, table, row, index,
/// both values), the others, or that every table agrees with portable on every step (the
/// change is then common to every ISA, or outside the kernels).
std::string describe(const Localisation& loc);

}  // namespace akv::cpu
