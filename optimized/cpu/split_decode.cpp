#include "optimized/cpu/split_decode.hpp"

#include <algorithm>

namespace akv::cpu {

SplitSizes split_sizes(const AttnArgs& a, int n_kv_heads) {
  const size_t b = static_cast<size_t>(n_kv_heads) * a.group * split_blocks(a);
  return {b * kKeyBlock, b, b * a.head_dim};
}

void split_decode(ThreadPool& pool, const Kernels& K, std::span<const AttnArgs> items, const SplitScratch& buf) {
  const AttnArgs& a0 = items.front();
  const int nbk = split_blocks(a0), n_keys = a0.pos + 1, kvh = static_cast<int>(items.size());
  const SplitSizes per = split_sizes(a0, 1);
  const bool f32 = a0.kv == KvType::kF32;
  const size_t rb = f32 ? static_cast<size_t>(a0.stride) * sizeof(float) : a0.row_bytes;
  auto phase = [&](bool values) {
    const auto* rows = f32 ? reinterpret_cast<const uint8_t*>(values ? a0.v : a0.k) : (values ? a0.vq : a0.kq);
    pool.run(nbk, [&](int b0, int b1) {
      for (int b = b0; b < b1; ++b) {
        // Decode reads each row once, and a head's part of each row is a stride the hardware
        // prefetchers follow poorly: ask for the next block's span while this one computes.
        const size_t next = static_cast<size_t>(b + 1) * kKeyBlock, end = std::min<size_t>(n_keys, next + kKeyBlock);
        for (size_t o = next * rb; o < end * rb; o += 64) __builtin_prefetch(rows + o);
        for (int g = 0; g < kvh; ++g) {
          float* s = buf.s + g * per.s;
          if (values) K.attention_split_values(items[g], b, b + 1, s, buf.mr + g * per.b, buf.lb + g * per.b, buf.acc + g * per.acc);
          else K.attention_split_scores(items[g], b, b + 1, s, buf.mb + g * per.b);
        }
      }
    });
  };
  phase(false);
  for (int g = 0; g < kvh; ++g) split_running_maxes(buf.mb + g * per.b, a0.group, nbk, buf.mr + g * per.b);
  phase(true);
  for (int g = 0; g < kvh; ++g) K.attention_split_fold(items[g], buf.mr + g * per.b, buf.lb + g * per.b, buf.acc + g * per.acc);
}

}  // namespace akv::cpu
