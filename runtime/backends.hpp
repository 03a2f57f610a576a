// Every backend by name: the one place that knows them all (runtime/ sits above reference/
// and optimized/), and the names their options take.
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

/// The cpu backend's names (spec/input.md IN9): what `--isa` takes ("auto", then every ISA the
/// build knows), the ISAs this CPU runs, the one "auto" resolves to here ($AKV_ISA, else the
/// best), and the most threads `--threads` takes.
std::vector<std::string> isa_choices();
std::vector<std::string> supported_isa_names();
std::string auto_isa_name();
int max_threads();

/// Backend by name. Throws Error(kUnknownBackend) for a name akv does not know and
/// Error(kBackendUnavailable) for one this build or machine lacks, both naming the backends
/// that exist; Error(kBadInput) for an ISA that is unknown or that this CPU lacks, or threads
/// outside [0, 256]; Error(kOutOfResources) when the threads cannot start.
std::unique_ptr<Backend> make_backend(const std::string& name, std::shared_ptr<const Model> model,
                                      const BackendOptions& opt = {});

}  // namespace akv
