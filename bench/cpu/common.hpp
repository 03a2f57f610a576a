// What both CPU benchmarks share: timing, a seeded token stream, the FLOP count of a forward,
// and the machine's description.
#pragma once
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "reference/config.hpp"

namespace akv::bench {

using Clock = std::chrono::steady_clock;

/// Seconds since `t0`.
inline double secs(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

/// n token ids in [0, vocab) from an LCG seeded by `seed`: the same prompt on every run.
std::vector<Token> random_tokens(size_t n, uint32_t seed, int vocab);

/// FLOPs of running m tokens at positions [p0, p0 + m) with `out_rows` rows through the
/// classifier: 2 per multiply-add of every matmul, 4 * head_dim per (query head, key) pair.
double flops(const Config& c, size_t p0, size_t m, size_t out_rows);
/// The layers' matmul term of flops() (wq|wk|wv, wo, w1|w3, w2; no classifier).
double layer_matmul_flops(const Config& c, size_t m);
/// The attention term of flops(): 4 * head_dim per (query head, key) pair.
double attention_flops(const Config& c, size_t p0, size_t m);

/// The "model name" line of /proc/cpuinfo, or "unknown".
std::string cpu_model();

/// This process's peak resident set size, KiB (getrusage).
long peak_rss_kib();

}  // namespace akv::bench
