// The shapes the per-op properties draw (op_props.hpp; spec/gate.md GT2, GT3): the sizes engines call
// kernels with (M up to a prefill chunk; the widths of real layers, SmolLM2-135M's and
// Llama-like ones) and one either side of every size where a kernel switches path (the cpu
// kernels' dispatch constants, optimized/cpu/kernels.hpp; powers of two for M). Each draw is a
// pick, then the value, so that a failing case shrinks to the small pick (0) and to 1.
#pragma once
#include <cstddef>
#include <vector>

#include "verify/check/edges.hpp"

namespace akv::check {

/// The largest call the row checks draw: a prefill chunk (llama.cpp's default ubatch).
inline constexpr int kPrefillChunk = 512;

/// Powers of two to kPrefillChunk and one either side of each, ascending, from 1.
std::vector<int> row_boundaries();
/// One either side of each multiple of the kernels' lane width, matmul k-block and key block
/// that a kernel may switch at (1, 2 and 4 of each) and the widths with a tail, ascending.
std::vector<int> width_boundaries();

/// M of a row check (RapidCheck): small (min_m..32, half the cases), at a boundary, or anywhere
/// up to a prefill chunk.
int gen_rows_m(int min_m);
/// A width (RapidCheck): small (1..129, most cases), at a boundary, anywhere to 700, or a real
/// layer's (one case in seven), never above max_width.
int gen_width(int max_width = 8192);
/// A row count for `width`-wide rows of at most `budget` floats in all (M shrunk, never below 1):
/// keeps a big M with a big width affordable.
int cap_rows(int M, long long width, long long budget);

}  // namespace akv::check
