// The cuda-emu backend as the tests run it: scratch filled with NaN, so that stale data cannot
// hide (spec/kernels-cuda.md G7).
#pragma once
#include <limits>
#include <memory>

#include "optimized/cuda/emu/emu_backend.hpp"
#include "support.hpp"

namespace akv::test {

/// cuda-emu over `m` (default: tiny) with NaN scratch.
inline std::unique_ptr<Backend> emu(std::shared_ptr<const Model> m = tiny()) {
  auto b = make_cuda_emu_backend(std::move(m));
  b->set_scratch_poison(std::numeric_limits<float>::quiet_NaN());
  return b;
}

}  // namespace akv::test
