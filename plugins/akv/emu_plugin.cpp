// The CUDA kernels' host emulation (cuda-emu) as a kernel library (spec/gate.md GT9).
#include <akv/kernels.h>

#include "optimized/cuda/emu/c_kernels.hpp"

extern "C" __attribute__((visibility("default"))) const akv_kernels* akv_get_kernels(void) {
  return akv::cuda::emu::emu_kernels();
}
