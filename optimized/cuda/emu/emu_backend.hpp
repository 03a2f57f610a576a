// "cuda-emu": the CUDA backend's forward pass run on the CPU (spec/kernels-cuda.md G9).
#pragma once
#include <memory>

#include "reference/backend.hpp"

namespace akv {

/// The host emulation of the "cuda" backend: the same chunking, the same kernels in the same
/// order, each kernel's per-output arithmetic from optimized/cuda/arith, run on the CPU. On a
/// GPU, "cuda" must give its bits exactly (G10). Deterministic and single-threaded.
std::unique_ptr<Backend> make_cuda_emu_backend(std::shared_ptr<const Model> model);

}  // namespace akv
