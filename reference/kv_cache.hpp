// The KV cache state (spec/state.md S1): per layer, the post-RoPE keys and the values of
// every cached token, entry p at absolute position p.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "reference/config.hpp"

namespace akv {

template <class T>
class KVCacheT {
 public:
  KVCacheT() = default;
  explicit KVCacheT(const Config& c) : kv_dim_(c.kv_dim()), k_(c.n_layers), v_(c.n_layers) {}

  size_t size() const { return n_; }
  int kv_dim() const { return kv_dim_; }
  int n_layers() const { return static_cast<int>(k_.size()); }

  /// Keys / values of `layer`: (size(), kv_dim), row p = position p.
  const T* k(int layer) const { return k_[layer].data(); }
  const T* v(int layer) const { return v_[layer].data(); }
  T* k(int layer) { return k_[layer].data(); }
  T* v(int layer) { return v_[layer].data(); }

  /// Makes room for m more entries (their contents are unspecified until written) and
  /// returns the first new position. Entries [0, size()) keep their bytes.
  size_t grow(size_t m) {
    const size_t first = n_;
    n_ += m;
    for (auto& l : k_) l.resize(n_ * kv_dim_);
    for (auto& l : v_) l.resize(n_ * kv_dim_);
    entries_written_ += m;
    return first;
  }

  /// Drops entries [n, size()); entries [0, n) are not touched (E3).
  void truncate(size_t n) {
    if (n >= n_) return;
    n_ = n;
    for (auto& l : k_) l.resize(n_ * kv_dim_);
    for (auto& l : v_) l.resize(n_ * kv_dim_);
  }

  /// Entries ever made by grow(): the write counter behind E3/E4 checks.
  uint64_t entries_written() const { return entries_written_; }

 private:
  int kv_dim_ = 0;
  size_t n_ = 0;
  std::vector<std::vector<T>> k_, v_;  // [layer] (n, kv_dim)
  uint64_t entries_written_ = 0;
};

using KVCache = KVCacheT<float>;

}  // namespace akv
