// Loading a kernel library (spec/gate.md GT1): dlopen, the one entry symbol, the table checked.
#pragma once
#include <memory>
#include <string>

#include "optimized/composed/op_set.hpp"

namespace akv {

/// Loads the kernel library at `path` (a file path; "lib.so" means ./lib.so), calls its
/// akv_get_kernels() and validates the table (OpSet), taking the ops in `select` from it.
/// The library stays loaded for the process's life (its table and threads may outlive any
/// one backend). Error(kBadKernels) "PATH: problem" when the file is missing or not a shared
/// library for this machine, lacks the symbol, or its table is invalid (OpSet).
std::shared_ptr<const OpSet> load_kernels(const std::string& path, uint32_t select = AKV_OP_ALL);

}  // namespace akv
