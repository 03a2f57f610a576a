// The reference ops as a kernel library: the gate's control (it must pass; spec/gate.md GT9).
#include <akv/kernels.h>

#include "reference/c_kernels.hpp"

extern "C" __attribute__((visibility("default"))) const akv_kernels* akv_get_kernels(void) {
  return akv::reference_kernels();
}
