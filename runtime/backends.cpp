#include "runtime/backends.hpp"

#include "optimized/composed/composed_backend.hpp"
#include "optimized/composed/plugin.hpp"
#include "optimized/cpu/cpu_backend.hpp"
#include "optimized/cpu/isa.hpp"
#include "optimized/cpu/thread_pool.hpp"
#include "reference/error.hpp"
#include "reference/strict.hpp"
#ifdef AKV_HAVE_CUDA_EMU
#include "optimized/cuda/emu/emu_backend.hpp"
#endif
#ifdef AKV_HAVE_CUDA
#include "optimized/cuda/device/cuda_backend.hpp"
#endif

namespace akv {

// "cuda" is listed only when a device is present at run time, so suites parameterised over
// backend_names() pass on CPU-only machines (spec/kernels-cuda.md G9).
std::vector<std::string> backend_names() {
  std::vector<std::string> names{"reference", "cpu"};
#ifdef AKV_HAVE_CUDA_EMU
  names.push_back("cuda-emu");
#endif
#ifdef AKV_HAVE_CUDA
  if (cuda_device_count() > 0) names.push_back("cuda");
#endif
  return names;
}

std::vector<std::string> known_backend_names() { return {"reference", "cpu", "cuda-emu", "cuda"}; }

std::vector<std::string> isa_choices() { return cpu::isa_choices(); }

std::vector<std::string> supported_isa_names() {
  std::vector<std::string> out;
  for (cpu::Isa i : cpu::supported_isas()) out.push_back(cpu::isa_name(i));
  return out;
}

std::string auto_isa_name() { return cpu::isa_name(cpu::resolve_isa("auto")); }

int max_threads() { return cpu::kMaxThreads; }

std::unique_ptr<Backend> make_backend(const std::string& name, std::shared_ptr<const Model> model,
                                      const BackendOptions& opt) {
  if (!opt.kernels.empty()) {  // `--kernels LIB.so`: the forward over the library's ops (GT7)
    ComposedOptions co;
    co.name = "kernels";
    co.threads = opt.threads;
    return make_composed_backend(std::move(model), load_kernels(opt.kernels), co);
  }
  if (name == "reference") return make_reference_backend(std::move(model));
  if (name == "cpu") return cpu::make_cpu_backend(std::move(model), {opt.isa, opt.threads});
#ifdef AKV_HAVE_CUDA_EMU
  if (name == "cuda-emu") return make_cuda_emu_backend(std::move(model));
#endif
#ifdef AKV_HAVE_CUDA
  if (name == "cuda") {
    if (cuda_device_count() > 0) return make_cuda_backend(std::move(model));
    throw Error(ErrorCode::kBackendUnavailable, "backend 'cuda' needs a CUDA device, and none was found");
  }
#endif
  std::string known;
  for (const auto& n : backend_names()) known += (known.empty() ? "" : ", ") + n;
  for (const auto& n : known_backend_names())
    if (n == name)
      throw Error(ErrorCode::kBackendUnavailable, "backend '" + name + "' is not in this build or on this machine (available: " +
                                                      known + ")");
  throw Error(ErrorCode::kUnknownBackend, "unknown backend '" + printable(name, 40) + "' (expected one of: " + known + ")");
}

}  // namespace akv
