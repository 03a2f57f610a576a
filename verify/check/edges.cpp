#include "verify/check/edges.hpp"

#include <algorithm>
#include <cmath>

#include "optimized/cpu/kernels.hpp"
#include "optimized/cuda/arith/gemm.hpp"
#include "optimized/cuda/arith/hd.hpp"

namespace akv::check {

namespace {

std::vector<int> sorted_unique(std::vector<int> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

}  // namespace

std::vector<int> k_tiles() {
  std::vector<int> v{cpu::kMatmulBlock, cpu::kLanes, cuda::kGemmBK};
  for (const cuda::GemmVariant& g : cuda::kGemmVariants) v.push_back(g.bk);
  return sorted_unique(v);
}

std::vector<int> row_and_output_tiles() {
  std::vector<int> v{cpu::kLanes, cuda::kGemmBM, cuda::kGemmBN};
  for (const cuda::GemmVariant& g : cuda::kGemmVariants) v.push_back(g.bm), v.push_back(g.bn);
  return sorted_unique(v);
}

std::vector<int> key_blocks() { return sorted_unique({cpu::kKeyBlock, cuda::kKvSplit}); }

std::vector<int> reduction_lanes() { return sorted_unique({cpu::kLanes, cuda::kWarpLanes}); }

std::vector<int> boundaries(const std::vector<int>& steps, std::initializer_list<int> multiples) {
  std::vector<int> out;
  for (int s : steps)
    for (int m : multiples)
      for (int w : {s * m - 1, s * m, s * m + 1})
        if (w >= 1) out.push_back(w);
  return sorted_unique(out);
}

std::vector<int> layer_widths() {
  constexpr int kHeadDim = 64;  // SmolLM2-135M: 9 heads, 3 KV heads
  return {3 * kHeadDim, 9 * kHeadDim, 1536, 2048, 4096, 8192};
}

std::vector<MatmulShape> matmul_edge_shapes() {
  std::vector<int> M = boundaries(row_and_output_tiles(), {1}), d = M;
  M.insert(M.begin(), {1, 3});
  const std::vector<int> n = boundaries(k_tiles(), {1, 2, 11});
  const size_t count = std::max({M.size(), n.size(), d.size()});
  std::vector<MatmulShape> out;
  for (size_t i = 0; i < count; ++i) {
    const int nn = n[i % n.size()];
    // n * k * k < 2^24: every partial sum of products of integers in [-k, k] is exact.
    const int k = std::clamp(static_cast<int>(std::sqrt((1 << 24) / static_cast<double>(nn))), 1, 7);
    out.push_back({M[i % M.size()], nn, d[(i + 1) % d.size()], k});
  }
  return out;
}

}  // namespace akv::check
