// The driver of K4's split over key blocks (spec/kernels-cpu.md K4 "Split over key blocks", K8)
// for one decode token: the phases of kernels.hpp's attention_split_* over a thread pool. The
// fused forward (cpu_backend.cpp) and the cpu op table (c_kernels.cpp) both run it.
#pragma once
#include <span>

#include "optimized/cpu/kernels.hpp"
#include "optimized/cpu/thread_pool.hpp"

namespace akv::cpu {

/// Scratch of split_decode, per KV head g at offset g * (the per-head size), floats, with
/// G = group, B = split_blocks(item), hd = head_dim: s (G, B * kKeyBlock); mb, mr, lb (G, B);
/// acc (G, B, hd). Every float split_decode reads it wrote first (callers may fill NaN).
struct SplitScratch {
  float* s;
  float* mb;
  float* mr;
  float* lb;
  float* acc;
};

/// Floats of each SplitScratch array for n_kv_heads items like `a`: {s, mb (= mr = lb), acc}.
struct SplitSizes {
  size_t s, b, acc;
};
SplitSizes split_sizes(const AttnArgs& a, int n_kv_heads);

/// Attention of one decode token, K4 split over key blocks: items[g] is KV head g's item
/// (rows == 1, split_attention_applies, the same pos, group, head_dim and cache type for all g),
/// outputs to items[g].out, bit for bit K.attention(items[g]) (K4, K8). The threads take ranges
/// of key blocks; a range runs block by block, every KV head on a block before the next block,
/// so a block's cache rows (a row holds every head, items[0]'s first) are one contiguous span,
/// and the next block's span is prefetched meanwhile (a hint only). Between phases 1 and 2 the
/// calling thread forms each head's running maxes (split_running_maxes); after phase 2 it folds.
void split_decode(ThreadPool& pool, const Kernels& K, std::span<const AttnArgs> items, const SplitScratch& buf);

}  // namespace akv::cpu
