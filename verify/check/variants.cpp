#include "verify/check/variants.hpp"

#include <algorithm>
#include <limits>

#include "optimized/cpu/isa.hpp"
#include "reference/error.hpp"
#include "reference/strict.hpp"
#include "runtime/backends.hpp"

namespace akv::check {

std::unique_ptr<Backend> Variant::make(std::shared_ptr<const Model> model) const {
  if (!unavailable.empty()) throw Error(ErrorCode::kBackendUnavailable, "variant " + label + " cannot run here: " + unavailable);
  BackendOptions o;
  if (!isa.empty()) o.isa = isa;
  o.threads = threads;
  auto b = factory ? factory(std::move(model)) : make_backend(backend, std::move(model), o);
  b->set_scratch_poison(std::numeric_limits<float>::quiet_NaN());
  return b;
}

std::vector<Variant> variants(const std::string& backend) {
  const std::vector<std::string> built = backend_names();
  const auto here = [&](const std::string& n) { return std::find(built.begin(), built.end(), n) != built.end(); };
  std::vector<Variant> all;
  all.push_back({"reference", "reference", "", 0, false, "", {}});
  for (cpu::Isa i : cpu::all_isas())
    for (int t : kCpuThreads) {
      // The emulated AVX-512 (K13) runs at the portable path's pace: no larger-model cases, and
      // one thread count (its thread split is the same code as avx512's, checked natively).
      const bool emulated = i == cpu::Isa::kAvx512Simde;
      if (emulated && t != kCpuThreads[0]) continue;
      const std::string isa = cpu::isa_name(i);
      all.push_back({isa + "_t" + std::to_string(t), "cpu", isa, t, i != cpu::Isa::kPortable && !emulated,
                     cpu::isa_supported(i) ? "" : "this CPU lacks " + isa, {}});
    }
  all.push_back({"cuda_emu", "cuda-emu", "", 0, false, here("cuda-emu") ? "" : "cuda-emu is not in this build", {}});
  all.push_back({"cuda", "cuda", "", 0, true, here("cuda") ? "" : "the cuda backend is not in this build, or no CUDA device is present", {}});
  if (backend.empty()) return all;
  std::vector<Variant> out;
  for (const Variant& v : all)
    if (v.backend == backend) out.push_back(v);
  return out;
}

Variant variant(const std::string& label) {
  std::string labels;
  for (const Variant& v : variants()) {
    if (v.label == label) return v;
    labels += (labels.empty() ? "" : ", ") + v.label;
  }
  throw Error(ErrorCode::kBadInput, "no backend variant '" + printable(label, 40) + "' (expected one of: " + labels + ")");
}

}  // namespace akv::check
