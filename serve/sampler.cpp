#include "serve/sampler.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>

#include "reference/error.hpp"
#include "reference/exp.hpp"

namespace akv::serve {

void check_finite_logits(std::span<const float> logits) {
  for (size_t i = 0; i < logits.size(); ++i)
    if (!std::isfinite(logits[i]))
      throw Error(ErrorCode::kBadModel, "logits: " + std::string(std::isnan(logits[i]) ? "NaN" : "Inf") + " at token id " +
                                            std::to_string(i) + " (the model computes a non-finite value; spec/arithmetic.md A5)");
}

Token Sampler::next(std::span<const float> logits) { return draw(logits, nullptr); }

Token Sampler::next(std::span<const float> logits, const std::vector<uint32_t>& allowed) { return draw(logits, &allowed); }

Token Sampler::draw(std::span<const float> logits, const std::vector<uint32_t>* allowed) {
  check_finite_logits(logits);
  auto ok = [&](size_t i) { return !allowed || (i / 32 < allowed->size() && ((*allowed)[i / 32] >> (i % 32) & 1u)); };
  size_t best = logits.size();
  for (size_t i = 0; i < logits.size(); ++i)
    if (ok(i) && (best == logits.size() || logits[i] > logits[best])) best = i;
  if (best == logits.size())
    throw std::logic_error("the grammar allows no token of the vocabulary (an engine defect; spec/serving.md SV14)");
  if (p_.temperature == 0) return static_cast<Token>(best);
  const float t = static_cast<float>(p_.temperature), mx = logits[best];
  std::vector<float> e(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) e[i] = ok(i) ? akv::exp((logits[i] - mx) / t) : 0.0f;
  std::vector<uint32_t> order(logits.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return e[a] > e[b]; });
  std::vector<float> c(order.size());
  float sum = 0;
  for (size_t k = 0; k < order.size(); ++k) c[k] = sum = sum + e[order[k]];
  const float want = static_cast<float>(p_.top_p) * sum;
  size_t k = 0;
  while (k + 1 < c.size() && c[k] < want) ++k;
  const float u = static_cast<float>(rng_.next() >> 40) * 0x1p-24f;
  const float target = u * c[k];
  for (size_t j = 0; j <= k; ++j)
    if (c[j] > target) return static_cast<Token>(order[j]);
  return static_cast<Token>(order[k]);
}

TokenLogprob token_logprob(std::span<const float> logits, Token token, int top) {
  double mx = logits[0];
  for (float v : logits) mx = std::max(mx, static_cast<double>(v));
  double sum = 0;
  for (float v : logits) sum += std::exp(static_cast<double>(v) - mx);
  const double ls = std::log(sum);
  auto lp = [&](size_t i) { return (static_cast<double>(logits[i]) - mx) - ls; };
  TokenLogprob r;
  r.token = token;
  r.logprob = lp(static_cast<size_t>(token));
  if (top > 0) {
    std::vector<uint32_t> ids(logits.size());
    std::iota(ids.begin(), ids.end(), 0u);
    const size_t k = std::min(ids.size(), static_cast<size_t>(top));
    std::partial_sort(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(k), ids.end(), [&](uint32_t a, uint32_t b) {
      return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
    });
    for (size_t i = 0; i < k; ++i) r.top.emplace_back(static_cast<Token>(ids[i]), lp(ids[i]));
  }
  return r;
}

}  // namespace akv::serve
