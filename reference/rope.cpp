#include "reference/rope.hpp"

#include <algorithm>
#include <cmath>

namespace akv {

RopeTable::RopeTable(int hd, float th, int mp, std::vector<float> ff)
    : head_dim(hd), max_pos(mp), theta(th), freq_factors(std::move(ff)) {
  const size_t n = static_cast<size_t>(mp) * static_cast<size_t>(hd / 2);
  // Uninitialised: the pages are not touched (nor counted in RSS) until their rows are filled.
  cos_.reset(new float[n]);
  sin_.reset(new float[n]);
}

RopeTable::RopeTable(RopeTable&& o) noexcept
    : head_dim(o.head_dim), max_pos(o.max_pos), theta(o.theta), freq_factors(std::move(o.freq_factors)), cos_(std::move(o.cos_)), sin_(std::move(o.sin_)),
      filled_(o.filled_.load()) {}

RopeTable& RopeTable::operator=(RopeTable&& o) noexcept {
  head_dim = o.head_dim, max_pos = o.max_pos, theta = o.theta, freq_factors = std::move(o.freq_factors);
  cos_ = std::move(o.cos_), sin_ = std::move(o.sin_);
  filled_.store(o.filled_.load());
  return *this;
}

void RopeTable::fill(int n) const {
  const std::lock_guard<std::mutex> lock(fill_);
  const int from = filled_.load(std::memory_order_relaxed);
  if (n <= from) return;
  // Whole blocks, so that a row-by-row reader does not take the lock per position.
  const int to = std::min(max_pos, (n + kBlock - 1) / kBlock * kBlock);
  const int h = half();
  for (int i = 0; i < h; ++i) {
    double inv_freq = std::pow(static_cast<double>(theta), -2.0 * i / head_dim);
    if (!freq_factors.empty()) inv_freq = inv_freq / static_cast<double>(freq_factors[static_cast<size_t>(i)]);
    for (int p = from; p < to; ++p) {
      const double a = static_cast<double>(p) * inv_freq;
      cos_[static_cast<size_t>(p) * h + i] = static_cast<float>(std::cos(a));
      sin_[static_cast<size_t>(p) * h + i] = static_cast<float>(std::sin(a));
    }
  }
  filled_.store(to, std::memory_order_release);
}

RopeTable make_rope_table(int head_dim, float theta, int max_pos, std::vector<float> freq_factors) {
  return RopeTable(head_dim, theta, max_pos, std::move(freq_factors));
}

}  // namespace akv
