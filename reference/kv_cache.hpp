// The KV cache state (spec/state.md S1): per layer, the post-RoPE keys and the values of
// every cached token, entry p at absolute position p.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include <boost/align/aligned_allocator.hpp>

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
    if (!mask_.empty()) mask_.resize(n_, 0);  // new entries are never masked (L3)
    for (size_t i = 0; i < m; ++i) serial_.push_back(++entries_written_);
    return first;
  }

  /// Drops entries [n, size()); entries [0, n) are not touched (E3).
  void truncate(size_t n) {
    if (n >= n_) return;
    n_ = n;
    for (auto& l : k_) l.resize(n_ * kv_dim_);
    for (auto& l : v_) l.resize(n_ * kv_dim_);
    if (!mask_.empty()) mask_.resize(n_);
    serial_.resize(n_);
    drop_clear_mask();
  }

  /// The attention mask (spec/leakage.md L3): (size(),) bytes, 1 = no query attends to that
  /// entry; nullptr when no entry is masked, so the unmasked path is the path of every
  /// backend before masks existed. Entries keep their K/V bytes and their positions.
  const uint8_t* mask() const { return mask_.empty() ? nullptr : mask_.data(); }
  /// Masks entries [begin, end) (L3). Precondition: begin <= end <= size(). K/V untouched.
  void mask_range(size_t begin, size_t end) {
    if (begin >= end) return;
    if (mask_.empty()) mask_.assign(n_, 0);
    std::fill(mask_.begin() + static_cast<std::ptrdiff_t>(begin), mask_.begin() + static_cast<std::ptrdiff_t>(end), uint8_t{1});
  }

  /// After an in-place edit of the rows that removed entries [begin, end): a backend's own
  /// evict op (Backend::edit_for_evict, spec/gate.md GT6) or K-shift (spec/leakage.md L4,
  /// leakage/approx_evict). The next entries were moved down by end - begin and rows
  /// [begin, placed) written by the edit (new serials: no mirror of the old rows is valid,
  /// G8; masks moved with them); rows from `placed` on are dropped (they are recomputed).
  /// Entries [0, begin) are not touched.
  /// Preconditions: begin < end <= size(), begin <= placed <= size() - (end - begin).
  void remove_edited(size_t begin, size_t end, size_t placed) {
    if (!mask_.empty())
      mask_.erase(mask_.begin() + static_cast<std::ptrdiff_t>(begin), mask_.begin() + static_cast<std::ptrdiff_t>(end));
    serial_.erase(serial_.begin() + static_cast<std::ptrdiff_t>(begin), serial_.begin() + static_cast<std::ptrdiff_t>(end));
    n_ -= end - begin;
    for (auto& l : k_) l.resize(n_ * kv_dim_);
    for (auto& l : v_) l.resize(n_ * kv_dim_);
    for (size_t p = begin; p < placed; ++p) serial_[p] = ++entries_written_;
    truncate(placed);
    drop_clear_mask();  // truncate() returns early when nothing is dropped
  }

  /// Entries written so far: one per entry (all layers' K and V of one position) made by
  /// grow() or rewritten in place (remove_edited()); truncate() writes nothing. Only the
  /// cache moves it, and never back: the write counter the witness reads around an eviction
  /// (E3, E4, O5) and the CUDA mirror checks (G8).
  uint64_t entries_written() const { return entries_written_; }

  /// (size(),): entry p's write serial, the value entries_written() took when p was last
  /// written. Unchanged serials of [0, f) mean no entry there was written again, even with
  /// the same bytes (E3, O5).
  std::span<const uint64_t> write_serials() const { return serial_; }

 private:
  // No entry masked: mask() is nullptr again, the path of every backend before masks.
  void drop_clear_mask() {
    if (std::find(mask_.begin(), mask_.end(), uint8_t{1}) == mask_.end()) mask_.clear();
  }

  int kv_dim_ = 0;
  size_t n_ = 0;
  // [layer] (n, kv_dim). 64-byte aligned, so a row whose bytes are a multiple of 64 never has a
  // SIMD load straddle two cache lines (a split load costs the kernels 13-16%, docs/performance.md).
  std::vector<std::vector<T, boost::alignment::aligned_allocator<T, 64>>> k_, v_;
  std::vector<uint8_t> mask_;          // (n,) or empty: nothing masked
  uint64_t entries_written_ = 0;
  std::vector<uint64_t> serial_;       // (n,) write serials
};

using KVCache = KVCacheT<float>;

}  // namespace akv
