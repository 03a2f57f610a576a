// An owning device allocation of floats or ints (cudaMalloc/cudaFree), movable only.
#pragma once
#include <cuda_runtime.h>

#include <cstddef>
#include <utility>
#include <vector>

#include "optimized/cuda/device/kernels.cuh"

namespace akv::cuda::dev {

template <class T>
class Buffer {
 public:
  Buffer() = default;
  explicit Buffer(size_t n) : n_(n) {
    if (n) check(cudaMalloc(&p_, n * sizeof(T)), "cudaMalloc");
  }
  /// A device copy of `host`.
  explicit Buffer(const std::vector<T>& host) : Buffer(host.size()) {
    if (n_) check(cudaMemcpy(p_, host.data(), n_ * sizeof(T), cudaMemcpyHostToDevice), "upload");
  }
  Buffer(Buffer&& o) noexcept : p_(std::exchange(o.p_, nullptr)), n_(std::exchange(o.n_, 0)) {}
  Buffer& operator=(Buffer&& o) noexcept {
    std::swap(p_, o.p_);
    std::swap(n_, o.n_);
    return *this;
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() {
    if (p_) cudaFree(p_);
  }
  T* get() const { return p_; }
  size_t size() const { return n_; }

 private:
  T* p_ = nullptr;
  size_t n_ = 0;
};

/// An owning page-locked host allocation (cudaMallocHost/cudaFreeHost) of at least n T,
/// grown on demand: the staging area that lets device-to-host copies run asynchronously.
template <class T>
class Pinned {
 public:
  Pinned() = default;
  Pinned(const Pinned&) = delete;
  Pinned& operator=(const Pinned&) = delete;
  ~Pinned() {
    if (p_) cudaFreeHost(p_);
  }
  /// The buffer, holding at least n elements (contents unspecified after a growth; a growth
  /// moves it, so a captured graph that copies into it must be dropped).
  T* at_least(size_t n) {
    if (n > n_) {
      if (p_) cudaFreeHost(p_);
      p_ = nullptr, n_ = 0;
      check(cudaMallocHost(reinterpret_cast<void**>(&p_), n * sizeof(T)), "cudaMallocHost");
      n_ = n;
    }
    return p_;
  }

 private:
  T* p_ = nullptr;
  size_t n_ = 0;
};
using PinnedFloats = Pinned<float>;

}  // namespace akv::cuda::dev
