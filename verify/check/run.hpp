// The one chunked run every invariance check builds on: tokens through a backend in calls of
// given lengths, and the one comparison of two runs (cache bytes, then logit rows).
#pragma once
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <vector>

#include "reference/backend.hpp"
#include "reference/token_stream.hpp"

namespace akv::check {

/// A fresh cache after a run and every row's logits (tokens, vocab), in token order.
struct Run {
  KVCache cache;
  std::vector<float> logits;
};

/// Runs `tokens` through `backend` on a fresh cache of type `kv` (spec/state.md S5) in calls of
/// `lengths` (each >= 1, summing to tokens.size()): the chunking under test in every I1 check.
/// Error(kBadInput) naming the problem when the lengths do not fit or the backend does not run
/// that type (check_backend_kv_type); the backend's own errors pass through.
Run run_chunked(Backend& backend, std::span<const Token> tokens, std::span<const size_t> lengths, KvType kv = KvType::kF32);
inline Run run_chunked(Backend& backend, std::span<const Token> tokens, std::initializer_list<size_t> lengths,
                       KvType kv = KvType::kF32) {
  return run_chunked(backend, tokens, std::span<const size_t>(lengths.begin(), lengths.size()), kv);
}

/// "" when a and b hold the same entries bitwise (size, shape, type, every layer's K and V as
/// float32 and as stored bytes); else one line naming the first difference and its max|delta|.
std::string cache_diff(const KVCache& a, const KVCache& b);

/// "" when two runs agree bitwise (cache_diff, then same_bits of the logit rows); else one line.
std::string run_diff(const Run& a, const Run& b);

}  // namespace akv::check

namespace akv::check {

/// A deterministic token sequence of length n over [0, vocab) from `seed` (an LCG): the
/// inputs of the invariance checks, reproducible on every machine.
inline std::vector<Token> tokens(size_t n, uint32_t seed, int vocab) { return lcg_tokens<Token>(n, seed, vocab); }

}  // namespace akv::check
