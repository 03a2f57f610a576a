// The one RoPE table (spec/model.md M6). Every backend reads this table; none recomputes it.
#pragma once
#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include "reference/config.hpp"

namespace akv {

/// cos/sin of RoPE angles, rotate-half convention (Su et al., RoFormer, 2021; the
/// Hugging Face Llama layout): pair (x[i], x[i + head_dim/2]) at position p turns by
/// p * theta^(-2i/head_dim).
///
/// Rows are computed when first read, in blocks of kBlock positions, never for the whole
/// context a model file claims (spec/model.md M6: a 97 KB file claiming 2^24 positions costs
/// what its conversations use, not a GiB). A row's value is M6's formula of (p, i, theta) alone,
/// so when it is computed changes no bit. The storage is reserved once for max_pos rows and
/// never moves, so a pointer stays valid while other rows are filled; reads are thread-safe.
class RopeTable {
 public:
  static constexpr int kBlock = 4096;

  RopeTable() = default;
  RopeTable(int head_dim, float theta, int max_pos, std::vector<float> freq_factors = {});
  RopeTable(RopeTable&& o) noexcept;
  RopeTable& operator=(RopeTable&& o) noexcept;

  int head_dim = 0;
  int max_pos = 0;
  float theta = 0;
  std::vector<float> freq_factors;  // (head_dim/2,) divisors of the frequencies (M20), or empty

  /// Row `pos` (head_dim/2 floats), computed first if need be. Precondition: 0 <= pos < max_pos.
  const float* cos_at(int pos) const { return (ensure(pos + 1), cos_.get() + static_cast<size_t>(pos) * half()); }
  const float* sin_at(int pos) const { return (ensure(pos + 1), sin_.get() + static_cast<size_t>(pos) * half()); }
  /// The whole table (max_pos, head_dim/2) with rows [0, n) computed: for code that indexes it
  /// itself (a kernel's RoPE op, a device copy). Precondition: 0 <= n <= max_pos.
  const float* cos_rows(int n) const { return (ensure(n), cos_.get()); }
  const float* sin_rows(int n) const { return (ensure(n), sin_.get()); }
  /// Rows computed so far (a multiple of kBlock, or max_pos).
  int rows_computed() const { return filled_.load(std::memory_order_acquire); }

 private:
  int half() const { return head_dim / 2; }
  void ensure(int n) const {
    if (n > filled_.load(std::memory_order_acquire)) fill(n);
  }
  void fill(int n) const;

  std::unique_ptr<float[]> cos_, sin_;  // max_pos x head_dim/2 each; rows >= filled_ not yet written
  mutable std::atomic<int> filled_{0};
  mutable std::mutex fill_;
};

/// The table for positions [0, max_pos): angle = double(p) * pow(double(theta), -2i/head_dim),
/// divided by double(freq_factors[i]) when factors are given (M20), cos and sin taken in double
/// and rounded once to float (M6); rows computed on first read. freq_factors: empty or
/// (head_dim/2,) finite floats > 0.
RopeTable make_rope_table(int head_dim, float theta, int max_pos, std::vector<float> freq_factors = {});

}  // namespace akv
