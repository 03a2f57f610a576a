// The one RoPE table (spec/model.md M6). Every backend reads this table; none recomputes it.
#pragma once
#include <vector>

#include "reference/config.hpp"

namespace akv {

/// cos/sin of RoPE angles, rotate-half convention (Su et al., RoFormer, 2021; the
/// Hugging Face Llama layout): pair (x[i], x[i + head_dim/2]) at position p turns by
/// p * theta^(-2i/head_dim).
struct RopeTable {
  int head_dim = 0;
  int max_pos = 0;
  std::vector<float> cos;  // (max_pos, head_dim/2)
  std::vector<float> sin;  // (max_pos, head_dim/2)
  const float* cos_at(int pos) const { return cos.data() + static_cast<size_t>(pos) * (head_dim / 2); }
  const float* sin_at(int pos) const { return sin.data() + static_cast<size_t>(pos) * (head_dim / 2); }
};

/// The table for positions [0, max_pos): angle = double(p) * pow(double(theta), -2i/head_dim),
/// cos and sin taken in double and rounded once to float (M6).
RopeTable make_rope_table(int head_dim, float theta, int max_pos);

}  // namespace akv
