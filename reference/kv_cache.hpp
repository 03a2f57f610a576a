// The KV cache state (spec/state.md S1, S5): per layer, the post-RoPE keys and the values of
// every cached token, entry p at absolute position p, each row stored as the cache's type.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <new>
#include <span>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include "reference/config.hpp"
#include "reference/kv_types.hpp"
#include "reference/streamed_storage.hpp"

namespace akv {

/// T = float: the rows are the bytes of the cache type (S5-S7), kv_row_bytes(type, kv_dim) a
/// row. Any other T (the MPFR oracle, the interval and affine enclosures of spec/bounds.md): the
/// rows are T values, kv_dim a row, and type() only names the type the enclosure models.
template <class T>
class KVCacheT {
  static constexpr bool kBytes = std::is_same_v<T, float>;
  using Cell = std::conditional_t<kBytes, unsigned char, T>;

 public:
  KVCacheT() = default;
  /// An empty cache of type t (S5). The caller checks t against the model (check_kv_type).
  explicit KVCacheT(const Config& c, KvType t = KvType::kF32)
      : kv_dim_(c.kv_dim()), type_(t), row_cells_(kBytes ? kv_row_bytes(t, c.kv_dim()) : static_cast<size_t>(c.kv_dim())),
        n_layers_(c.n_layers), max_rows_(c.max_ctx > 0 ? static_cast<size_t>(c.max_ctx) : 0) {}

  size_t size() const { return n_; }
  int kv_dim() const { return kv_dim_; }
  int n_layers() const { return n_layers_; }
  /// The cache type, fixed for the cache's life (S5).
  KvType type() const { return type_; }
  /// Bytes of one stored row (one entry of one layer, K or V): kv_row_bytes(type(), kv_dim()).
  size_t row_bytes() const { return row_cells_ * sizeof(Cell); }

  /// Keys / values of `layer` as T: (size(), kv_dim), row p = position p. For T = float only
  /// when type() is f32 (std::logic_error otherwise: read typed rows with k_rows / k_bytes).
  const T* k(int layer) const { return as_t(slot(layer, 0)); }
  const T* v(int layer) const { return as_t(slot(layer, 1)); }
  T* k(int layer) { return const_cast<T*>(as_t(slot(layer, 0))); }
  T* v(int layer) { return const_cast<T*>(as_t(slot(layer, 1))); }

  /// The stored bytes of `layer`'s keys / values: size() rows of row_bytes() (S4's digest reads these).
  const unsigned char* k_bytes(int layer) const { return reinterpret_cast<const unsigned char*>(slot(layer, 0)); }
  const unsigned char* v_bytes(int layer) const { return reinterpret_cast<const unsigned char*>(slot(layer, 1)); }
  unsigned char* k_bytes(int layer) { return reinterpret_cast<unsigned char*>(slot(layer, 0)); }
  unsigned char* v_bytes(int layer) { return reinterpret_cast<unsigned char*>(slot(layer, 1)); }

  /// Writes entry `pos`'s key and value rows (kv_dim each) of `layer`, as the type stores them
  /// (S6, S7: rounded here, once). pos < size().
  void store(int layer, size_t pos, const T* key, const T* value) {
    if constexpr (kBytes) {
      kv_encode_row(type_, key, kv_dim_, k_bytes(layer) + pos * row_cells_);
      kv_encode_row(type_, value, kv_dim_, v_bytes(layer) + pos * row_cells_);
    } else {
      std::copy_n(key, kv_dim_, slot(layer, 0) + pos * row_cells_);
      std::copy_n(value, kv_dim_, slot(layer, 1) + pos * row_cells_);
    }
  }

  /// Rows [first, first + n) of `layer`'s keys / values as T (n, kv_dim), as attention reads
  /// them (S8): the rows themselves for f32 (and any T other than float), else converted into
  /// `buf`, which grows to hold them.
  const T* k_rows(int layer, size_t first, size_t n, std::vector<T>& buf) const { return rows(slot(layer, 0), first, n, buf); }
  const T* v_rows(int layer, size_t first, size_t n, std::vector<T>& buf) const { return rows(slot(layer, 1), first, n, buf); }

  /// Makes room for m more entries (zero cells until written) and returns the first new
  /// position. Entries [0, size()) keep their bytes; pointers to rows stay valid unless the
  /// capacity grows.
  size_t grow(size_t m) {
    const size_t first = n_;
    if (m > cap_ - n_) reserve(std::max({n_ + m, cap_ + cap_ / 8, size_t{16}}));
    n_ += m;
    for (int l = 0; l < n_layers_; ++l)
      for (int kv = 0; kv < 2; ++kv) std::fill_n(slot(l, kv) + first * row_cells_, m * row_cells_, Cell{});
    if (!mask_.empty()) mask_.resize(n_, 0);  // new entries are never masked (L3)
    for (size_t i = 0; i < m; ++i) serial_.push_back(++entries_written_);
    return first;
  }

  /// Drops entries [n, size()); entries [0, n) are not touched (E3).
  void truncate(size_t n) {
    if (n >= n_) return;
    n_ = n;
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
  // Layer l's keys are slot (l, 0), its values (l, 1): cap_ rows each, in one block, so a
  // decode step streams through 2 MiB pages, not 4 KiB ones (allocate_streamed).
  // Each slot starts on a 64-byte boundary whatever the row size.
  const Cell* slot(int layer, int kv) const { return cells_.v.data() + (2 * static_cast<size_t>(layer) + kv) * stride_; }
  Cell* slot(int layer, int kv) { return cells_.v.data() + (2 * static_cast<size_t>(layer) + kv) * stride_; }
  // Room for cap entries (cap >= n_). Within the block's reserved address space the slots
  // spread out in place, the last first, so no second copy of the rows is ever held; past it
  // (a cache over max_ctx, or a copy's first growth) the rows move to a new block.
  void reserve(size_t cap) {
    const size_t slots = 2 * static_cast<size_t>(n_layers_);
    const size_t stride = stride_for(cap);
    if (slots * stride <= cells_.v.capacity()) {
      cells_.v.resize(slots * stride);
      for (size_t s = slots - 1; s > 0 && stride > stride_; --s) {  // slot 0 stays where it is
        Cell* from = cells_.v.data() + s * stride_;
        std::move_backward(from, from + n_ * row_cells_, cells_.v.data() + s * stride + n_ * row_cells_);
      }
    } else {
      Cells next;
      // Address space for max_ctx entries (float rows only: an oracle's cells are large and
      // its runs short). Where the system will not reserve that much, room for cap serves.
      try {
        next.reserve(std::max(slots * stride, kBytes ? slots * stride_for(max_rows_) : 0));
      } catch (const std::bad_alloc&) {
        next.reserve(slots * stride);
      }
      next.resize(slots * stride);
      for (size_t s = 0; s < slots; ++s) std::copy_n(cells_.v.data() + s * stride_, n_ * row_cells_, next.data() + s * stride);
      cells_.v.swap(next);
    }
    cap_ = cap;
    stride_ = stride;
  }
  size_t stride_for(size_t cap) const {
    constexpr size_t kAlign = kBytes ? 64 : 1;
    return (cap * row_cells_ + kAlign - 1) / kAlign * kAlign;
  }
  const T* as_t(const Cell* r) const {
    if constexpr (kBytes) {
      if (type_ != KvType::kF32) throw std::logic_error("KVCache: float rows of a typed cache (use k_rows / k_bytes)");
      return reinterpret_cast<const float*>(r);
    } else {
      return r;
    }
  }
  const T* rows(const Cell* r, size_t first, size_t n, std::vector<T>& buf) const {
    if constexpr (kBytes) {
      if (type_ != KvType::kF32) {
        if (buf.size() < n * kv_dim_) buf.resize(n * kv_dim_);
        for (size_t p = 0; p < n; ++p)
          kv_decode_row(type_, r + (first + p) * row_cells_, kv_dim_, buf.data() + p * kv_dim_);
        return buf.data();
      }
    }
    return as_t(r) + first * kv_dim_;
  }
  // No entry masked: mask() is nullptr again, the path of every backend before masks.
  void drop_clear_mask() {
    if (std::find(mask_.begin(), mask_.end(), uint8_t{1}) == mask_.end()) mask_.clear();
  }

  int kv_dim_ = 0;
  KvType type_ = KvType::kF32;
  size_t row_cells_ = 0;  // Cells a row: row bytes (T = float) or kv_dim
  int n_layers_ = 0;
  size_t max_rows_ = 0;  // the model's max_ctx: the entries the block's address space is reserved for
  size_t n_ = 0;
  size_t cap_ = 0;     // entries each slot holds
  size_t stride_ = 0;  // cells from one slot to the next: cap_ rows, rounded up to 64 bytes
  // (n_layers, 2) slots of cap_ rows, rows [0, n_) in use. 64-byte aligned, so a row whose
  // bytes are a multiple of 64 never has a SIMD load straddle two cache lines (a split load
  // costs the kernels 13-16%, docs/performance.md).
  using Cells = std::vector<Cell, StreamedAllocator<Cell>>;
  // A copy keeps the reservation, so its growth spreads in place too.
  struct Block {
    Cells v;
    Block() = default;
    Block(const Block& o) { v.reserve(o.v.capacity()); v = o.v; }
    Block(Block&&) noexcept = default;
    Block& operator=(const Block& o) {
      if (this != &o) {
        Block c(o);
        v.swap(c.v);
      }
      return *this;
    }
    Block& operator=(Block&&) noexcept = default;
  };
  Block cells_;
  std::vector<uint8_t> mask_;          // (n,) or empty: nothing masked
  uint64_t entries_written_ = 0;
  std::vector<uint64_t> serial_;       // (n,) write serials
};

using KVCache = KVCacheT<float>;

}  // namespace akv
