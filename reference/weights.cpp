#include "reference/weights.hpp"

#include <cmath>
#include <limits>

#include "reference/prng.hpp"

namespace akv {

namespace {
// Compares y = g / sqrt(n) with m > 0 exactly: the sign of g^2 - n*m^2 (all three positive,
// so y > m iff g^2 > n*m^2). g has 24 significant bits and m, a midpoint of two floats, 25:
// g = G*2^a, m = M*2^b with integers G, M, and both sides are integers after one shift.
int compare_quotient(float g, int n, double m) {
  int a = 0, b = 0;
  const auto G = static_cast<unsigned __int128>(std::ldexp(std::frexp(static_cast<double>(g), &a), 24));
  const auto M = static_cast<unsigned __int128>(std::ldexp(std::frexp(m, &b), 25));
  const int s = 2 * ((a - 24) - (b - 25));
  // m is within a few ulps of y, so |s| <= 2*(log2(sqrt n) + 2) < 40: no shift overflows 128 bits.
  unsigned __int128 lhs = G * G, rhs = static_cast<unsigned __int128>(n) * M * M;
  if (s >= 0) lhs <<= s; else rhs <<= -s;
  return lhs > rhs ? 1 : (lhs < rhs ? -1 : 0);
}
}  // namespace

// The double quotient is within a few double ulps of y, hence at most one float away from the
// answer; the exact comparisons with the neighbouring midpoints then settle it. A tie is
// impossible: y = m = M*2^b would need n = g^2 / m^2 with M odd and >= 2^24, so M^2 would
// divide a power of two.
float weight_scale(float gain, int fan_in) {
  float c = static_cast<float>(static_cast<double>(gain) / std::sqrt(static_cast<double>(fan_in)));
  const float inf = std::numeric_limits<float>::infinity();
  auto mid = [](float x, float y) { return (static_cast<double>(x) + static_cast<double>(y)) / 2; };  // exact in double
  while (compare_quotient(gain, fan_in, mid(c, std::nextafter(c, inf))) > 0) c = std::nextafter(c, inf);
  while (compare_quotient(gain, fan_in, mid(std::nextafter(c, 0.0f), c)) < 0) c = std::nextafter(c, 0.0f);
  return c;
}

namespace {
// A matrix of `rows*cols` values u * (gain / sqrt(fan_in)), u uniform in [-1, 1) (M3).
std::vector<float> matrix(uint64_t seed, uint64_t id, int rows, int cols, float gain) {
  SplitMix64 g = tensor_stream(seed, id);
  const float scale = weight_scale(gain, cols);
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
  // The block variants' tensors (M13), after W_cls so the llama block's weights never change:
  // layer l's ids e = end + 2 + 7l: e+0..e+2 b_q, b_k, b_v (u / 4), e+3 q_norm, e+4 k_norm,
  // e+5 post_attn_norm, e+6 post_ffn_norm (1 + u/4); each only under its feature.
  for (int l = 0; l < c.n_layers; ++l) {
    const uint64_t e = end + 2 + 7 * static_cast<uint64_t>(l);
    LayerWeights<float>& L = w.layers[static_cast<size_t>(l)];
    if (c.qkv_bias) {
      L.bq = matrix(seed, e + 0, 1, c.q_dim(), 0.25f), L.bk = matrix(seed, e + 1, 1, c.kv_dim(), 0.25f);
      L.bv = matrix(seed, e + 2, 1, c.kv_dim(), 0.25f);
    }
    if (c.qk_norm) L.q_norm = norm(seed, e + 3, c.head_dim), L.k_norm = norm(seed, e + 4, c.head_dim);
    if (c.post_norms) L.post_attn_norm = norm(seed, e + 5, c.hidden), L.post_ffn_norm = norm(seed, e + 6, c.hidden);
  }
  return w;
}

}  // namespace akv
