#include "reference/weights.hpp"

#include <cmath>

#include "reference/prng.hpp"

namespace akv {

namespace {
// A matrix of `rows*cols` values u * (gain / sqrt(fan_in)), u uniform in [-1, 1) (M3).
std::vector<float> matrix(uint64_t seed, uint64_t id, int rows, int cols, float gain) {
  SplitMix64 g = tensor_stream(seed, id);
  const float scale = gain / std::sqrt(static_cast<float>(cols));
  std::vector<float> w(static_cast<size_t>(rows) * cols);
  for (float& x : w) x = g.uniform() * scale;
  return w;
}
// A norm weight 1 + u/4 (M3): near one, not all equal, so a wrong index shows.
std::vector<float> norm(uint64_t seed, uint64_t id, int n) {
  SplitMix64 g = tensor_stream(seed, id);
  std::vector<float> w(n);
  for (float& x : w) x = 1.0f + g.uniform() * 0.25f;
  return w;
}
}  // namespace

Weights<float> make_synthetic_weights(const Config& c, uint64_t seed) {
  Weights<float> w;
  {
    SplitMix64 g = tensor_stream(seed, 0);
    w.tok_emb.resize(static_cast<size_t>(c.vocab) * c.hidden);
    for (float& x : w.tok_emb) x = g.uniform();
  }
  for (int l = 0; l < c.n_layers; ++l) {
    const uint64_t b = 1 + 9 * static_cast<uint64_t>(l);
    LayerWeights<float> L;
    L.attn_norm = norm(seed, b + 0, c.hidden);
    L.wq = matrix(seed, b + 1, c.q_dim(), c.hidden, c.qk_gain);
    L.wk = matrix(seed, b + 2, c.kv_dim(), c.hidden, c.qk_gain);
    L.wv = matrix(seed, b + 3, c.kv_dim(), c.hidden, 1.0f);
    L.wo = matrix(seed, b + 4, c.hidden, c.q_dim(), 1.0f);
    L.ffn_norm = norm(seed, b + 5, c.hidden);
    L.w1 = matrix(seed, b + 6, c.ffn, c.hidden, 1.0f);
    L.w2 = matrix(seed, b + 7, c.hidden, c.ffn, 1.0f);
    L.w3 = matrix(seed, b + 8, c.ffn, c.hidden, 1.0f);
    w.layers.push_back(std::move(L));
  }
  const uint64_t end = 1 + 9 * static_cast<uint64_t>(c.n_layers);
  w.final_norm = norm(seed, end, c.hidden);
  w.wcls = matrix(seed, end + 1, c.vocab, c.hidden, 1.0f);
  return w;
}

}  // namespace akv
