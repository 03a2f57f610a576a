// A shrunk counterexample as a conversation file that `akv witness FILE --evict ...`
// re-runs (spec/properties.md "Counterexample files").
#pragma once
#include <string>
#include <vector>

#include "verify/props/harness.hpp"

namespace akv::prop {

/// The file's contents and the command that re-runs it.
struct CounterexampleFile {
  std::string json;             // {"messages": [{"role", "tokens"}...], "poisoned": [...], "akv_counterexample": {...}}
  std::vector<size_t> evict;    // message indexes of the file (empty spans are left out)
  bool witness_applies = false; // at least one span evicted and one kept
  std::string witness_args;     // "--evict 1,3 --model tiny --seed 7 --backend cpu --threads 3 --isa avx2"
};

/// Builds the file: one message per non-empty span, with raw "tokens" (spec/model.md M5),
/// the evicted ones as "poisoned", and an "akv_counterexample" object (property, backend,
/// model (a name or a "synthetic:" shape, M12), seed, reproduce string, note, the original
/// span indexes, each backend's threads, ISA and scratch) that the parser ignores. The
/// witness arguments carry the first backend's threads and ISA.
CounterexampleFile counterexample_file(const Counterexample& c, const std::string& property_id,
                                       const std::string& backend, const std::string& reproduce);

/// Writes `f.json` to `dir`/`name` (creating `dir`) and returns the path. Throws
/// Error(kBadInput) when the file cannot be written.
std::string write_counterexample(const std::string& dir, const std::string& name, const CounterexampleFile& f);

}  // namespace akv::prop
