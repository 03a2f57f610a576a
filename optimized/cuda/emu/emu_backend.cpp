// The "cuda-emu" backend: the composed forward (spec/gate.md GT7) over the CUDA kernels' host
// emulation, in chunks of the device backend's kMaxRows rows: device/cuda_backend.cpp's
// kernel sequence, kernel by kernel, on the host.
#include "optimized/cuda/emu/emu_backend.hpp"

#include "optimized/composed/composed_backend.hpp"
#include "optimized/cuda/arith/gemm.hpp"
#include "optimized/cuda/emu/c_kernels.hpp"

namespace akv {

std::unique_ptr<Backend> make_cuda_emu_backend(std::shared_ptr<const Model> model) {
  static const auto ops = std::make_shared<const OpSet>(cuda::emu::emu_kernels(), nullptr, "cuda-emu");
  ComposedOptions opt;
  opt.name = "cuda-emu";
  opt.isa = "scalar (the CUDA kernels' arithmetic)";
  opt.max_rows = cuda::kMaxRows;
  return make_composed_backend(std::move(model), ops, opt);
}

}  // namespace akv
