// "cuda": the CUDA backend (spec/kernels-cuda.md). Built only when nvcc is found
// (AKV_HAVE_CUDA); usable only when a device is present at run time.
#pragma once
#include <memory>

#include "reference/backend.hpp"

namespace akv {

/// CUDA devices visible to this process; 0 when there is no driver or no device (never throws).
int cuda_device_count();

/// The CUDA backend on device `device`. Weights, the one RoPE table (M6, copied bit for bit)
/// and a mirror of the KV cache live on the device; the host KVCache stays the source of truth
/// (G8). Throws std::runtime_error when the device cannot be used.
std::unique_ptr<Backend> make_cuda_backend(std::shared_ptr<const Model> model, int device = 0);

}  // namespace akv
