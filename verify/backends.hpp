// Every backend by name: the one place that knows them all (verify/ sits above reference/
// and optimized/).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "reference/backend.hpp"

namespace akv {

/// Names of the backends built into this binary, "reference" first.
std::vector<std::string> backend_names();

/// Options of the backends that have any; the reference ignores them.
struct BackendOptions {
  std::string isa = "auto";  // cpu: portable | avx2 | avx512 | auto ($AKV_ISA, else the best)
  int threads = 0;           // cpu: 0 means $AKV_THREADS, else 2
};

/// Backend by name. Throws Error(kUnknownModel) naming the backends that exist, and
/// Error(kBadInput) for an ISA that is unknown or that this CPU lacks.
std::unique_ptr<Backend> make_backend(const std::string& name, std::shared_ptr<const Model> model,
                                      const BackendOptions& opt = {});

}  // namespace akv
