// The sizes where a kernel switches tile, block or path, read from the kernels' own constants
// (optimized/cpu/kernels.hpp, optimized/cuda/arith/), as CUTLASS's testbed derives its problem
// sizes from the tile shape: the per-op edge tables (op_checks.hpp) and the properties' drawn
// shapes (op_shapes.hpp) take their edge cases from here, never from literals, so a new tile size
// is checked once its constant is listed here.
#pragma once
#include <initializer_list>
#include <vector>

namespace akv::check {

/// The matmul tiles along k (the reduction): cpu::kMatmulBlock, cuda::kGemmBK and every GEMM
/// variant's bk, and the lane widths cpu::kLanes; ascending, unique.
std::vector<int> k_tiles();
/// The matmul tiles along M (rows) and d (outputs): every GEMM variant's bm and bn and the cpu
/// panel width cpu::kLanes; ascending, unique.
std::vector<int> row_and_output_tiles();
/// The attention key blocks: cpu::kKeyBlock (K4) and cuda::kKvSplit (G5); ascending, unique.
std::vector<int> key_blocks();
/// The lane widths of the row reductions: cpu::kLanes (K1, K3) and cuda::kWarpLanes (G3).
std::vector<int> reduction_lanes();

/// For each step s and multiple m: s*m - 1, s*m and s*m + 1 (those >= 1), ascending, unique.
std::vector<int> boundaries(const std::vector<int>& steps, std::initializer_list<int> multiples);

/// The widths (n of a reduction, d of a matmul's outputs) of real layers: SmolLM2-135M (hidden
/// 576, 9 heads and 3 KV heads of 64: 192, intermediate 1536) and Llama-like 2048, 4096, 8192.
std::vector<int> layer_widths();

/// A matmul shape and the bound k on its small-integer inputs (|X|, |W| <= k).
struct MatmulShape {
  int M, n, d, k;
};
/// Shapes on and either side of every matmul tile edge: M around each row tile (and 1, 3),
/// n around 1, 2 and 11 k-tiles, d around each output tile, paired cyclically so that every
/// edge value occurs; k keeps every partial sum an integer below 2^24 (exact in any order).
std::vector<MatmulShape> matmul_edge_shapes();

}  // namespace akv::check
