// The CUDA kernels' launchers (spec/kernels-cuda.md G2-G6). Every pointer is device memory;
// every launch goes to `stream` and returns without synchronising. Each launcher's result is
// bitwise the host emulation's of the same name (emu/emu_ops.hpp): the per-output arithmetic
// is the same __host__ __device__ code (arith/*.hpp).
#pragma once
#include <cuda_runtime.h>

#include <cstddef>

namespace akv::cuda::dev {

/// Throws std::runtime_error naming `what` when `e` is not cudaSuccess.
void check(cudaError_t e, const char* what);

/// Device floats the split-K partials of one product need: splitk_chunks(n, d) * M * d when
/// its k is split (arith/gemm.hpp, G2), else 0. (device/gemm.cu)
size_t gemm_work_floats(int M, int n, int d);

/// out (M, d) = X (M, n) @ W^T, W (d, n) row-major. G2: the chunks of k splitk_chunks(n, d)
/// into work (at least gemm_work_floats(M, n, d) floats; their contents are overwritten),
/// then their sums in chunk order; the variant is gemm_variant_for's. Bits do not depend on
/// the variant. Throws std::runtime_error when work is too small. (device/gemm.cu)
void gemm(float* out, const float* X, const float* W, int M, int n, int d, float* work, size_t work_floats,
          cudaStream_t stream);

/// Up to kGemmBatchMax products that share X, run as one launch (G2, each output unchanged):
/// out[i] (M, d[i]) = X (M, n) @ W[i]^T, W[i] (d[i], n) row-major, i < count. work: the
/// split-K partials of every split product, gemm_work_floats(batch, M, n) floats at least.
inline constexpr int kGemmBatchMax = 3;
struct GemmBatch {
  int count = 0;
  const float* W[kGemmBatchMax] = {};
  float* out[kGemmBatchMax] = {};
  int d[kGemmBatchMax] = {};
  float* work = nullptr;
  size_t work_floats = 0;
  float* part[kGemmBatchMax] = {};  // set by the launcher: product i's partials inside work
};

/// The split-K partials of every product of the batch: the sum of gemm_work_floats(M, n, d[i]).
size_t gemm_work_floats(const GemmBatch& batch, int M, int n);

/// Every product of the batch, with gemm_variant_for's variant. Throws std::runtime_error when
/// count is outside 1..kGemmBatchMax or the workspace is too small. (device/gemm.cu)
void gemm_batch(const GemmBatch& batch, const float* X, int M, int n, cudaStream_t stream);

/// The batch with variant `variant` (an index into kGemmVariants). Throws on a bad index.
void gemm_batch_variant(int variant, const GemmBatch& batch, const float* X, int M, int n, cudaStream_t stream);

/// The same product with variant `variant` (an index into kGemmVariants, arith/gemm.hpp),
/// for the benchmark and the device tests. Throws std::runtime_error on a bad index.
void gemm_variant(int variant, float* out, const float* X, const float* W, int M, int n, int d, float* work,
                  size_t work_floats, cudaStream_t stream);

/// The variant gemm() and gemm_batch() launch for this batch on the current device: the
/// fastest, timed once per (M rounded up to a power of two, n, the d's) by running each
/// variant on these operands (whose outputs it therefore writes with the product) and kept.
/// Speed only (G2).
int gemm_variant_for(const GemmBatch& batch, const float* X, int M, int n, cudaStream_t stream);

/// out (M, n) = RMSNorm of each row of x (M, n), weight w (n,). G3. out may alias x.
void rmsnorm_rows(float* out, const float* x, const float* w, int M, int n, float eps, cudaStream_t stream);

/// RoPE on x (M, n_heads*head_dim), row r at position pos0 + r; cos/sin: the one table
/// (max_pos, head_dim/2) on the device. G4. pos_dev: nullptr, or a device int read by the
/// kernel in place of pos0 (a captured graph replays with new positions; the same arithmetic).
void rope_rows(float* x, int M, int n_heads, int head_dim, int pos0, const float* cos, const float* sin,
               cudaStream_t stream, const int* pos_dev = nullptr);

/// dst + pos0*width (M, width) = src (M, width): the chunk's K or V rows into the cache
/// mirror (G8). pos_dev: as rope_rows.
void write_rows(float* dst, const float* src, int M, int width, int pos0, cudaStream_t stream,
                const int* pos_dev = nullptr);

/// Causal GQA attention (G5) of q (M, n_heads*head_dim) at positions pos0.. over one layer's
/// cache k, v (>= pos0+M rows, n_kv_heads*head_dim) into out (M, n_heads*head_dim).
/// part_m, part_l: (M*n_heads*max_splits,), part_o: (M*n_heads*max_splits*head_dim,) scratch,
/// max_splits >= n_splits(pos0 + M). pos_dev: nullptr, or a device int read by the kernels in
/// place of pos0; the partial grid then spans max_splits splits, those past the row's exit.
void attention_rows(float* out, const float* q, const float* k, const float* v, int M, int pos0, int n_heads,
                    int n_kv_heads, int head_dim, int max_splits, float* part_m, float* part_l, float* part_o,
                    cudaStream_t stream, const int* pos_dev = nullptr);

/// x (M, d) = rows tokens[r] of emb (vocab, d). tokens: device (M,).
void embed(float* x, const int* tokens, const float* emb, int M, int d, cudaStream_t stream);

/// g (n,) = swiglu(g, u) elementwise (G6).
void swiglu(float* g, const float* u, size_t n, cudaStream_t stream);

/// x (n,) = x + y elementwise (G6).
void add(float* x, const float* y, size_t n, cudaStream_t stream);

/// p (n,) = value: the scratch poison.
void fill(float* p, size_t n, float value, cudaStream_t stream);

}  // namespace akv::cuda::dev
