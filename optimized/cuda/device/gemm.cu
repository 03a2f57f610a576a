// The GEMM kernels (spec/kernels-cuda.md G2): one template, instantiated for each variant of
// arith/gemm.hpp, the kernel that adds the split-K chunk sums, and the launcher that picks a
// variant by shape. Every variant computes each chunk's sum as dot_range (k ascending from +0,
// one fma per k, in one thread's registers); the chunks are splitk_chunks(n, d), a function
// of the shape alone, and splitk_combine adds them in chunk order. So the variant changes the
// speed, never a bit. No atomics.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <mutex>
#include <array>

#include "optimized/cuda/arith/gemm.hpp"
#include "optimized/cuda/device/kernels.cuh"

namespace akv::cuda::dev {

namespace {

// Four consecutive k of one row of A (rows x n), zero where the row is out of range or k is
// past the chunk's end kend (<= n). kVec: n % 4 == 0 and A 16-byte aligned; chunk bounds are
// multiples of kSplitKAlign or n, so k < kend implies k + 3 < kend and one float4 load.
template <bool kVec>
__device__ __forceinline__ float4 fetch4(const float* __restrict__ A, int row, int rows, int n, int kend, int k) {
  float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  if (row >= rows) return v;
  const float* p = A + static_cast<size_t>(row) * n + k;
  if constexpr (kVec) {
    if (k < kend) v = *reinterpret_cast<const float4*>(p);
  } else {
    if (k < kend) v.x = p[0];
    if (k + 1 < kend) v.y = p[1];
    if (k + 2 < kend) v.z = p[2];
    if (k + 3 < kend) v.w = p[3];
  }
  return v;
}

static_assert(kSplitKAlign % 4 == 0, "chunk bounds keep float4 loads inside the chunk");

// Split-K's second step (G2): out[e] = splitk_combine of the chunk sums part[c * count + e],
// c in chunk order. One thread per output.
__global__ void splitk_combine_kernel(float* __restrict__ out, const float* __restrict__ part, int S, size_t count) {
  const size_t e = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (e < count) out[e] = splitk_combine(part + e, static_cast<long>(count), S);
}

// Block: a BM x BN output tile; thread (ty, tx) owns TM/4 groups of 4 rows, the g-th at
// g*BM/(TM/4) + 4*ty, and TN/4 groups of 4 outputs likewise: each 4-group is one float4
// read of shared memory. k-tiles of BK are double-buffered in shared memory (k-major, rows
// padded by 4 floats against bank conflicts), the next one staged in registers while the
// current one is multiplied. blockIdx.z = product * zc + chunk: the block walks only its
// chunk's k [k0, k1) (splitk_len, splitk_chunks of (n, d), arith/gemm.hpp). Inside a tile
// kk < kb ascending: each accumulator sees mac(acc, X[m, k], W[i, k]) for k = k0 .. k1-1 in
// order, exactly dot_range. A product of one chunk stores to out; of several, to its
// partials (chunk c at part + c*M*d), which splitk_combine_kernel adds. Rows and outputs
// past the edge are computed on zeros and never stored; k outside the chunk is never multiplied.
template <int BM, int BN, int TM, int TN>
__host__ __device__ constexpr int gemm_threads() { return (BM / TM) * (BN / TN); }

template <int BM, int BN, int BK>
constexpr size_t gemm_smem_bytes() { return sizeof(float) * 2 * BK * ((BM + 4) + (BN + 4)); }

template <int BM, int BN, int BK, int TM, int TN, bool kVec>
__global__ void __launch_bounds__(gemm_threads<BM, BN, TM, TN>())
    gemm_kernel(GemmBatch batch, const float* __restrict__ X, int M, int n, int zc) {
  // blockIdx.z: which product of the batch and which chunk of its k; column tiles past its d
  // and chunks past its count exit at once.
  const int z = blockIdx.z / zc, chunk = blockIdx.z % zc;
  const float* __restrict__ W = z == 0 ? batch.W[0] : (z == 1 ? batch.W[1] : batch.W[2]);
  const int d = z == 0 ? batch.d[0] : (z == 1 ? batch.d[1] : batch.d[2]);
  if (static_cast<int>(blockIdx.x) * BN >= d || chunk >= splitk_chunks(n, d)) return;
  const int klen = splitk_len(n, d), k0 = chunk * klen, k1 = min(n, k0 + klen);
  float* __restrict__ out = splitk_chunks(n, d) == 1
                                ? (z == 0 ? batch.out[0] : (z == 1 ? batch.out[1] : batch.out[2]))
                                : (z == 0 ? batch.part[0] : (z == 1 ? batch.part[1] : batch.part[2])) +
                                      static_cast<size_t>(chunk) * M * d;
  constexpr int kGemmThreads = gemm_threads<BM, BN, TM, TN>();
  static_assert(TM % 4 == 0 && TN % 4 == 0 && BK % 4 == 0, "float4 fragments");
  constexpr int KQ = BK / 4;                                  // float4s per row of a k-tile
  constexpr int NA = (BM * KQ + kGemmThreads - 1) / kGemmThreads;  // staged float4s per thread
  constexpr int NB = (BN * KQ + kGemmThreads - 1) / kGemmThreads;
  constexpr int RG = TM / 4, CG = TN / 4;
  extern __shared__ float4 gemm_smem[];  // gemm_smem_bytes: two X tiles, then two W tiles
  float(*xs)[BK][BM + 4] = reinterpret_cast<float(*)[BK][BM + 4]>(gemm_smem);
  float(*ws)[BK][BN + 4] = reinterpret_cast<float(*)[BK][BN + 4]>(reinterpret_cast<float*>(gemm_smem) + 2 * BK * (BM + 4));
  const int tid = threadIdx.x, tx = tid % (BN / TN), ty = tid / (BN / TN);
  const int m0 = blockIdx.y * BM, i0 = blockIdx.x * BN;

  float4 ra[NA], rb[NB];
  auto load = [&](int kt) {
#pragma unroll
    for (int a = 0; a < NA; ++a) {
      const int e = tid + a * kGemmThreads;
      if (BM * KQ % kGemmThreads == 0 || e < BM * KQ) ra[a] = fetch4<kVec>(X, m0 + e / KQ, M, n, k1, kt + (e % KQ) * 4);
    }
#pragma unroll
    for (int b = 0; b < NB; ++b) {
      const int e = tid + b * kGemmThreads;
      if (BN * KQ % kGemmThreads == 0 || e < BN * KQ) rb[b] = fetch4<kVec>(W, i0 + e / KQ, d, n, k1, kt + (e % KQ) * 4);
    }
  };
  auto store = [&](int buf) {
#pragma unroll
    for (int a = 0; a < NA; ++a) {
      const int e = tid + a * kGemmThreads;
      if (BM * KQ % kGemmThreads == 0 || e < BM * KQ) {
        const int r = e / KQ, k = (e % KQ) * 4;
        xs[buf][k][r] = ra[a].x, xs[buf][k + 1][r] = ra[a].y, xs[buf][k + 2][r] = ra[a].z, xs[buf][k + 3][r] = ra[a].w;
      }
    }
#pragma unroll
    for (int b = 0; b < NB; ++b) {
      const int e = tid + b * kGemmThreads;
      if (BN * KQ % kGemmThreads == 0 || e < BN * KQ) {
        const int r = e / KQ, k = (e % KQ) * 4;
        ws[buf][k][r] = rb[b].x, ws[buf][k + 1][r] = rb[b].y, ws[buf][k + 2][r] = rb[b].z, ws[buf][k + 3][r] = rb[b].w;
      }
    }
  };

  float acc[TM][TN];
#pragma unroll
  for (int p = 0; p < TM; ++p)
#pragma unroll
    for (int q = 0; q < TN; ++q) acc[p][q] = 0.0f;

  const int tiles = (k1 - k0 + BK - 1) / BK;
  if (tiles > 0) {
    load(k0);
    store(0);
    __syncthreads();
  }
  // kk < kb ascending; kb < BK only in the last tile, which takes the checked loop so that
  // the full tiles' loop has no branch between its shared-memory loads and its fmas.
  auto multiply = [&](int buf, int kk) {
    float a[TM], b[TN];
#pragma unroll
    for (int g = 0; g < RG; ++g) {
      const float4 v = *reinterpret_cast<const float4*>(&xs[buf][kk][g * (BM / RG) + ty * 4]);
      a[4 * g] = v.x, a[4 * g + 1] = v.y, a[4 * g + 2] = v.z, a[4 * g + 3] = v.w;
    }
#pragma unroll
    for (int g = 0; g < CG; ++g) {
      const float4 v = *reinterpret_cast<const float4*>(&ws[buf][kk][g * (BN / CG) + tx * 4]);
      b[4 * g] = v.x, b[4 * g + 1] = v.y, b[4 * g + 2] = v.z, b[4 * g + 3] = v.w;
    }
#pragma unroll
    for (int p = 0; p < TM; ++p)
#pragma unroll
      for (int q = 0; q < TN; ++q) acc[p][q] = mac(acc[p][q], a[p], b[q]);
  };
  for (int t = 0; t < tiles; ++t) {
    const int buf = t & 1, kb = min(BK, k1 - k0 - t * BK);
    if (t + 1 < tiles) load(k0 + (t + 1) * BK);
    if (kb == BK) {
#pragma unroll
      for (int kk = 0; kk < BK; ++kk) multiply(buf, kk);
    } else {
      for (int kk = 0; kk < kb; ++kk) multiply(buf, kk);
    }
    if (t + 1 < tiles) store(buf ^ 1);
    __syncthreads();  // the next tile is in place; nobody still reads this one
  }

#pragma unroll
  for (int p = 0; p < TM; ++p) {
    const int m = m0 + (p / 4) * (BM / RG) + ty * 4 + p % 4;
    if (m >= M) continue;
    float* o = out + static_cast<size_t>(m) * d;
#pragma unroll
    for (int g = 0; g < CG; ++g) {
      const int i = i0 + g * (BN / CG) + tx * 4;
      if (kVec && d % 4 == 0 && i + 3 < d) {
        *reinterpret_cast<float4*>(o + i) = make_float4(acc[p][4 * g], acc[p][4 * g + 1], acc[p][4 * g + 2], acc[p][4 * g + 3]);
      } else {
#pragma unroll
        for (int j = 0; j < 4; ++j)
          if (i + j < d) o[i + j] = acc[p][4 * g + j];
      }
    }
  }
}

template <int BM, int BN, int BK, int TM, int TN>
void launch(bool vec, const GemmBatch& b, const float* X, int M, int n, cudaStream_t s) {
  int dmax = 0, zc = 1;
  for (int i = 0; i < b.count; ++i) dmax = std::max(dmax, b.d[i]), zc = std::max(zc, splitk_chunks(n, b.d[i]));
  const dim3 grid((dmax + BN - 1) / BN, (M + BM - 1) / BM, b.count * zc);
  constexpr int threads = gemm_threads<BM, BN, TM, TN>();
  constexpr size_t smem = gemm_smem_bytes<BM, BN, BK>();
  auto kernel = vec ? gemm_kernel<BM, BN, BK, TM, TN, true> : gemm_kernel<BM, BN, BK, TM, TN, false>;
  if constexpr (smem > 48 * 1024)  // past the default: opt in on this device, per launch
    check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)),
          "gemm shared memory");
  kernel<<<grid, threads, smem, s>>>(b, X, M, n, zc);
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

}  // namespace

size_t gemm_work_floats(int M, int n, int d) {
  const int S = splitk_chunks(n, d);
  return S == 1 || M <= 0 || d <= 0 ? 0 : static_cast<size_t>(S) * M * d;
}

size_t gemm_work_floats(const GemmBatch& b, int M, int n) {
  size_t f = 0;
  for (int i = 0; i < b.count && i < kGemmBatchMax; ++i) f += gemm_work_floats(M, n, b.d[i]);
  return f;
}

void gemm_batch_variant(int variant, const GemmBatch& batch, const float* X, int M, int n, cudaStream_t s) {
  if (batch.count < 1 || batch.count > kGemmBatchMax) check(cudaErrorInvalidValue, "gemm batch size");
  GemmBatch b = batch;  // with each split product's partials carved from the workspace
  if (gemm_work_floats(b, M, n) > b.work_floats) check(cudaErrorInvalidValue, "gemm split-K workspace too small");
  bool vec = n % 4 == 0 && aligned16(X);
  int dmax = 0;
  size_t at = 0;
  for (int i = 0; i < b.count; ++i) {
    b.part[i] = gemm_work_floats(M, n, b.d[i]) ? b.work + at : nullptr;
    at += gemm_work_floats(M, n, b.d[i]);
    vec = vec && aligned16(b.W[i]) && aligned16(b.out[i]) && (b.part[i] == nullptr || aligned16(b.part[i]));
    dmax = std::max(dmax, b.d[i]);
  }
  if (M <= 0 || dmax <= 0) return;
  switch (variant) {
    case 0: launch<128, 128, 16, 8, 8>(vec, b, X, M, n, s); break;
    case 1: launch<128, 128, 16, 8, 4>(vec, b, X, M, n, s); break;
    case 2: launch<128, 96, 16, 8, 8>(vec, b, X, M, n, s); break;
    case 3: launch<96, 128, 16, 8, 8>(vec, b, X, M, n, s); break;
    case 4: launch<96, 128, 16, 8, 4>(vec, b, X, M, n, s); break;
    case 5: launch<128, 64, 16, 8, 8>(vec, b, X, M, n, s); break;
    case 6: launch<128, 64, 16, 4, 4>(vec, b, X, M, n, s); break;
    case 7: launch<64, 64, 16, 4, 4>(vec, b, X, M, n, s); break;
    case 8: launch<64, 64, 32, 4, 4>(vec, b, X, M, n, s); break;
    case 9: launch<64, 32, 16, 4, 4>(vec, b, X, M, n, s); break;
    case 10: launch<32, 32, 32, 4, 4>(vec, b, X, M, n, s); break;
    default: check(cudaErrorInvalidValue, "gemm variant");
  }
  check(cudaGetLastError(), "gemm");
  for (int i = 0; i < b.count; ++i) {
    const int S = splitk_chunks(n, b.d[i]);
    if (S == 1 || b.d[i] <= 0) continue;
    const size_t count = static_cast<size_t>(M) * b.d[i];
    splitk_combine_kernel<<<static_cast<unsigned>((count + 255) / 256), 256, 0, s>>>(b.out[i], b.part[i], S, count);
    check(cudaGetLastError(), "gemm split-K combine");
  }
}
static_assert(kGemmVariantCount == 11, "gemm_batch_variant's switch instantiates every variant of arith/gemm.hpp");

int gemm_variant_for(const GemmBatch& b, const float* X, int M, int n, cudaStream_t s) {
  // Speed only: every variant gives the same bits (G2), so the fastest one is measured once
  // per (M rounded up to a power of two, n, the d's) on this device, as autotuners do, and kept.
  int mb = 1;
  while (mb < M) mb *= 2;
  int dev = 0;
  check(cudaGetDevice(&dev), "cudaGetDevice");
  const std::array<int, 6> key{dev, mb, n, b.d[0], b.count > 1 ? b.d[1] : 0, b.count > 2 ? b.d[2] : 0};
  static std::mutex mu;
  static std::map<std::array<int, 6>, int> picks;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (const auto it = picks.find(key); it != picks.end()) return it->second;
  }
  struct Event {  // destroyed on every path, a throwing check() included
    cudaEvent_t e = nullptr;
    Event() { check(cudaEventCreate(&e), "event"); }
    ~Event() { cudaEventDestroy(e); }
  } ea, ee;
  const cudaEvent_t a = ea.e, e = ee.e;
  int best = 0;
  float best_ms = 0.0f;
  for (int v = 0; v < kGemmVariantCount; ++v) {
    gemm_batch_variant(v, b, X, M, n, s);  // warm-up; every run writes the same bits
    check(cudaEventRecord(a, s), "record");
    gemm_batch_variant(v, b, X, M, n, s);
    check(cudaEventRecord(e, s), "record");
    check(cudaEventSynchronize(e), "sync");
    float ms = 0.0f;
    check(cudaEventElapsedTime(&ms, a, e), "elapsed");
    if (v == 0 || ms < best_ms) best = v, best_ms = ms;
  }
  std::lock_guard<std::mutex> lock(mu);
  picks.emplace(key, best);
  return best;
}

void gemm_batch(const GemmBatch& b, const float* X, int M, int n, cudaStream_t s) {
  if (M <= 0) return;
  gemm_batch_variant(gemm_variant_for(b, X, M, n, s), b, X, M, n, s);
}

static GemmBatch gemm_one(float* out, const float* W, int d, float* work, size_t work_floats) {
  GemmBatch b;
  b.count = 1, b.W[0] = W, b.out[0] = out, b.d[0] = d, b.work = work, b.work_floats = work_floats;
  return b;
}

void gemm(float* out, const float* X, const float* W, int M, int n, int d, float* work, size_t work_floats,
          cudaStream_t s) {
  gemm_batch(gemm_one(out, W, d, work, work_floats), X, M, n, s);
}

void gemm_variant(int variant, float* out, const float* X, const float* W, int M, int n, int d, float* work,
                  size_t work_floats, cudaStream_t s) {
  gemm_batch_variant(variant, gemm_one(out, W, d, work, work_floats), X, M, n, s);
}

}  // namespace akv::cuda::dev
