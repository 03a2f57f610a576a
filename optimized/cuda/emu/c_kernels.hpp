// The CUDA kernels' host emulation as a table of the kernel ABI (include/akv/kernels.h,
// spec/gate.md GT1): the cuda-emu backend is the composed forward over it (GT7), and the gate
// checks it like any plugin.
#pragma once
#include <akv/kernels.h>

namespace akv::cuda::emu {

/// Every op but evict, single-threaded (one host thread walks the launch); no scratch (the
/// launches' buffers are their own). Static storage.
const akv_kernels* emu_kernels();

}  // namespace akv::cuda::emu
