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

/// Every backend name akv knows, built or not: a name here that backend_names() lacks is
/// Error(kBackendUnavailable), any other Error(kUnknownBackend) (spec/input.md IN7).
std::vector<std::string> known_backend_names();

/// Options of the backends that have any; the reference ignores them.
struct BackendOptions {
  std::string isa = "auto";  // cpu: portable | avx2 | avx512 | auto ($AKV_ISA, else the best)
  int threads = 0;           // cpu: 0 means $AKV_THREADS, else 2
  std::string kernels;       // a kernel library (spec/gate.md GT1): when set, the backend is the
                             // composed forward over its ops, whatever the name
};

/// Backend by name. Throws Error(kUnknownBackend) for a name akv does not know and
/// Error(kBackendUnavailable) for one this build or machine lacks, both naming the backends
/// that exist; Error(kBadInput) for an ISA that is unknown or that this CPU lacks, or threads
/// outside [0, 256]; Error(kOutOfResources) when the threads cannot start.
std::unique_ptr<Backend> make_backend(const std::string& name, std::shared_ptr<const Model> model,
                                      const BackendOptions& opt = {});

}  // namespace akv
