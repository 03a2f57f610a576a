// The next-token rule of the server, defined bit for bit (spec/serving.md SV4): greedy at
// temperature 0, else a seeded draw over the top-p nucleus. Same logits, same parameters,
// same seed: the same token, on every machine.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "reference/config.hpp"
#include "reference/prng.hpp"

namespace akv::serve {

struct SamplerParams {
  double temperature = 0;  // 0: greedy; (0, 2]: the draw of SV4
  double top_p = 1;        // (0, 1]: the nucleus mass
  uint64_t seed = 0;       // the draw's SplitMix64 seed (required when temperature > 0)
};

/// One token's log-probability and the top alternatives (SV5).
struct TokenLogprob {
  Token token = 0;
  double logprob = 0;
  std::vector<std::pair<Token, double>> top;  // highest first, ties by lower id
};

class Sampler {
 public:
  explicit Sampler(const SamplerParams& p) : p_(p), rng_{p.seed} {}
  /// SV4. The next token of `logits` (vocab,). T = 0: the lowest id of the maximum. T > 0, in
  /// binary32: z_i = (l_i - max) / T, e_i = akv::exp(z_i) (A4); ids ordered by e descending,
  /// ties by lower id; prefix sums c_k left to right in that order; the nucleus is the shortest
  /// prefix with c_k >= top_p * c_vocab; u = (next() >> 40) * 2^-24; the token is the first of
  /// the nucleus with c_j > u * c_k. Throws Error(kBadModel) naming the first non-finite logit.
  Token next(std::span<const float> logits);
  /// SV14: the same draw with the ids `allowed` does not set (a GrammarMatcher's bitmask, bit
  /// id % 32 of word id / 32) taken as -inf: the maximum and the nucleus are over allowed ids
  /// only (e_i = 0 for the others). The logits are checked finite first, as next() does, so a
  /// model's NaN is named whatever the mask. Throws std::logic_error (an internal error) if no id is allowed.
  Token next(std::span<const float> logits, const std::vector<uint32_t>& allowed);

 private:
  Token draw(std::span<const float> logits, const std::vector<uint32_t>* allowed);
  SamplerParams p_;
  SplitMix64 rng_;
};

/// SV5. log-softmax of `logits` at `token`, and the `top` most likely ids: in binary64,
/// (l_i - max) - log(sum_j exp(l_j - max)), the sum left to right by id (as spec/leakage.md L9).
TokenLogprob token_logprob(std::span<const float> logits, Token token, int top);

/// Throws Error(kBadModel) `logits: NaN at token id N` when a logit is not finite (A5).
void check_finite_logits(std::span<const float> logits);

}  // namespace akv::serve
