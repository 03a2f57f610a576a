#include "reference/rope.hpp"

#include <cmath>

namespace akv {

RopeTable make_rope_table(int head_dim, float theta, int max_pos) {
  RopeTable t;
  t.head_dim = head_dim;
  t.max_pos = max_pos;
  const int half = head_dim / 2;
  t.cos.resize(static_cast<size_t>(max_pos) * half);
  t.sin.resize(static_cast<size_t>(max_pos) * half);
  for (int i = 0; i < half; ++i) {
    const double inv_freq = std::pow(static_cast<double>(theta), -2.0 * i / head_dim);
    for (int p = 0; p < max_pos; ++p) {
      const double a = static_cast<double>(p) * inv_freq;
      t.cos[static_cast<size_t>(p) * half + i] = static_cast<float>(std::cos(a));
      t.sin[static_cast<size_t>(p) * half + i] = static_cast<float>(std::sin(a));
    }
  }
  return t;
}

}  // namespace akv
