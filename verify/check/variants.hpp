// The registry of backend variants every check runs over: the reference; the cpu backend on
// each ISA it knows times thread counts; cuda-emu; cuda. A variant this build or machine
// cannot run stays listed with the reason, so a suite reports it skipped, never passed.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "reference/backend.hpp"

namespace akv::check {

/// One way to run a backend.
struct Variant {
  std::string label;        // readable and a valid test name: "reference", "avx512_t2", "cuda_emu", "cuda"
  std::string backend;      // its runtime/backends.hpp name: "reference", "cpu", "cuda-emu", "cuda"
  std::string isa;          // cpu: "portable" | "avx2" | "avx512"; "" otherwise
  int threads = 0;          // cpu: the thread count (>= 1); 0 for backends without threads
  bool fast = false;        // a SIMD or device path: the checks add their larger-model cases
  std::string unavailable;  // "" when this build and machine run it; else why not
  /// When set, make() builds the backend with it instead of by name (a plugin, or a
  /// deliberately broken backend that the checks must catch).
  std::function<std::unique_ptr<Backend>(std::shared_ptr<const Model>)> factory;

  /// A fresh backend of this variant on `model`, scratch poisoned with NaN (tests, spec I1).
  /// Error(kBackendUnavailable) naming `unavailable` when it cannot run here.
  std::unique_ptr<Backend> make(std::shared_ptr<const Model> model) const;
};

/// Thread counts of the cpu variants: 2 (the default) and 3 (uneven panel ranges). One thread
/// (no split) is the baseline threads_change_nothing compares both with.
inline constexpr int kCpuThreads[] = {2, 3};

/// Every variant akv knows, in a stable order (reference, cpu by ISA then threads, cuda-emu,
/// cuda), or those of one backend name when `backend` is not empty; available or not.
std::vector<Variant> variants(const std::string& backend = "");

/// The variant labelled `label`; Error(kBadInput) naming the labels when there is none.
Variant variant(const std::string& label);

}  // namespace akv::check
