// The forward pass over a kernel table, written once (spec/gate.md GT7): the model of
// spec/model.md M11 as calls of an OpSet's ops on all rows of a call at once. cuda-emu runs
// through it, so does every plugin; the cpu backend keeps a fused forward that equals it (GT8).
#pragma once
#include <memory>
#include <string>

#include "optimized/composed/op_set.hpp"
#include "reference/backend.hpp"

namespace akv {

struct ComposedOptions {
  std::string name = "composed";  // Backend::name()
  std::string isa;                // describe()'s ISA; "" = the table's name
  int max_rows = 0;               // rows per forward chunk (a call runs as ceil(m / max_rows) chunks); 0: no limit
  int threads = 0;                // > 0: set_threads(threads) on the table (Error(kBadKernels) if refused)
};

/// A backend computing with `ops` on `model`: weights prepared once (prepare_weight) and
/// released with the backend; scratch from the table's scratch_floats, poisoned like every
/// backend's (default_scratch_poison, set_scratch_poison). The evict op, when the table
/// provides it, is Backend::edit_for_evict, its contract checked (GT6): r in range and the
/// prefix rows bitwise unchanged, else Error(kBadKernels).
std::unique_ptr<Backend> make_composed_backend(std::shared_ptr<const Model> model, std::shared_ptr<const OpSet> ops,
                                               const ComposedOptions& opt = {});

}  // namespace akv
