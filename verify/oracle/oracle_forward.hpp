// Runs a token sequence through the ONE reference template (reference/forward.hpp) in any
// scalar type: float, the MPFR oracle (B12), the enclosure (B11).
#pragma once
#include <span>
#include <vector>

#include "reference/forward.hpp"
#include "reference/model.hpp"
#include "verify/oracle/real.hpp"

namespace akv::oracle {

/// The logits (vocab,) after appending `tokens` (n >= 1) to an empty cache of type `kv`, one
/// token at a time through ref::forward_token<T>, the weights of scalar Wt (T, or float). Tokens
/// must lie in [0, vocab), n <= max_ctx. For an exact T (the oracle, intervals) the type changes
/// nothing (the exact model keeps every value); the affine enclosure adds its rounding (B18).
template <class Wt, class T = Wt>
std::vector<T> last_logits(const ModelT<Wt>& m, std::span<const Token> tokens, KvType kv = KvType::kF32) {
  KVCacheT<T> cache(m.config, kv);
  ref::RunState<T> s(m.config);
  std::vector<T> logits(m.config.vocab);
  // Only the last token's logits are wanted: the others skip the classifier.
  for (size_t i = 0; i < tokens.size(); ++i)
    ref::forward_token(m, cache, tokens[i], i + 1 == tokens.size() ? logits.data() : nullptr, s);
  return logits;
}

/// The exact (MPFR) logits of `model` after `tokens`: last_logits<Real> on the same
/// float32 weights. Compiled once in oracle_forward.cpp.
std::vector<Real> oracle_logits(const Model& model, std::span<const Token> tokens);

/// One attention head (spec/model.md M9) in MPFR: query q (d,) over keys and values k, v
/// (n, d) row-major, n >= 1, through ref::attention_head<Real>. The exact value every B14
/// bound is measured against (the per-op checks and `akv gate`'s GT3.attention.bound).
std::vector<Real> exact_attention_head(const float* q, const float* k, const float* v, int n, int d);

}  // namespace akv::oracle
