// The GEMM kernels (spec/kernels-cuda.md G2): one template, instantiated for each variant of
// arith/gemm.hpp, and the launcher that picks a variant by shape. Every variant computes each
// output as dot_chain (k ascending from +0, one fma per k, in one thread's registers), so the
// choice changes the speed, never a bit. No split-K, no atomics.
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

// Four consecutive k of one row of A (rows x n), zero where the row or k is out of range.
// kVec: n % 4 == 0 and A 16-byte aligned, so k < n implies k + 3 < n and one float4 load.
template <bool kVec>
__device__ __forceinline__ float4 fetch4(const float* __restrict__ A, int row, int rows, int n, int k) {
  float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  if (row >= rows) return v;
  const float* p = A + static_cast<size_t>(row) * n + k;
  if constexpr (kVec) {
    if (k < n) v = *reinterpret_cast<const float4*>(p);
  } else {
    if (k < n) v.x = p[0];
    if (k + 1 < n) v.y = p[1];
    if (k + 2 < n) v.z = p[2];
    if (k + 3 < n) v.w = p[3];
  }
  return v;
}

// Block: a BM x BN output tile; thread (ty, tx) owns TM/4 groups of 4 rows, the g-th at
// g*BM/(TM/4) + 4*ty, and TN/4 groups of 4 outputs likewise: each 4-group is one float4
// read of shared memory. k-tiles of BK are double-buffered in shared memory (k-major, rows
// padded by 4 floats against bank conflicts), the next one staged in registers while the
// current one is multiplied. Inside a tile kk < kb ascending: each accumulator sees
// mac(acc, X[m, k], W[i, k]) for k = 0 .. n-1 in order, exactly dot_chain. Rows and outputs
// past the edge are computed on zeros and never stored; k >= n is never multiplied.
template <int BM, int BN, int TM, int TN>
__host__ __device__ constexpr int gemm_threads() { return (BM / TM) * (BN / TN); }

template <int BM, int BN, int BK>
constexpr size_t gemm_smem_bytes() { return sizeof(float) * 2 * BK * ((BM + 4) + (BN + 4)); }

template <int BM, int BN, int BK, int TM, int TN, bool kVec>
__global__ void __launch_bounds__(gemm_threads<BM, BN, TM, TN>())
    gemm_kernel(GemmBatch batch, const float* __restrict__ X, int M, int n) {
  // blockIdx.z: which product of the batch; column tiles past its d exit at once.
  const int z = blockIdx.z;
  const float* __restrict__ W = z == 0 ? batch.W[0] : (z == 1 ? batch.W[1] : batch.W[2]);
  float* __restrict__ out = z == 0 ? batch.out[0] : (z == 1 ? batch.out[1] : batch.out[2]);
  const int d = z == 0 ? batch.d[0] : (z == 1 ? batch.d[1] : batch.d[2]);
  if (static_cast<int>(blockIdx.x) * BN >= d) return;
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
  auto load = [&](int k0) {
#pragma unroll
    for (int a = 0; a < NA; ++a) {
      const int e = tid + a * kGemmThreads;
      if (BM * KQ % kGemmThreads == 0 || e < BM * KQ) ra[a] = fetch4<kVec>(X, m0 + e / KQ, M, n, k0 + (e % KQ) * 4);
    }
#pragma unroll
    for (int b = 0; b < NB; ++b) {
      const int e = tid + b * kGemmThreads;
      if (BN * KQ % kGemmThreads == 0 || e < BN * KQ) rb[b] = fetch4<kVec>(W, i0 + e / KQ, d, n, k0 + (e % KQ) * 4);
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

  const int tiles = (n + BK - 1) / BK;
  if (tiles > 0) {
    load(0);
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
    const int buf = t & 1, kb = min(BK, n - t * BK);
    if (t + 1 < tiles) load((t + 1) * BK);
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
  int dmax = 0;
  for (int i = 0; i < b.count; ++i) dmax = std::max(dmax, b.d[i]);
  const dim3 grid((dmax + BN - 1) / BN, (M + BM - 1) / BM, b.count);
  constexpr int threads = gemm_threads<BM, BN, TM, TN>();
  constexpr size_t smem = gemm_smem_bytes<BM, BN, BK>();
  auto kernel = vec ? gemm_kernel<BM, BN, BK, TM, TN, true> : gemm_kernel<BM, BN, BK, TM, TN, false>;
  if constexpr (smem > 48 * 1024)  // past the default: opt in on this device, per launch
    check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)),
          "gemm shared memory");
  kernel<<<grid, threads, smem, s>>>(b, X, M, n);
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

}  // namespace

void gemm_batch_variant(int variant, const GemmBatch& b, const float* X, int M, int n, cudaStream_t s) {
  if (b.count < 1 || b.count > kGemmBatchMax) check(cudaErrorInvalidValue, "gemm batch size");
  bool vec = n % 4 == 0 && aligned16(X);
  int dmax = 0;
  for (int i = 0; i < b.count; ++i) {
    vec = vec && aligned16(b.W[i]) && aligned16(b.out[i]);
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

static GemmBatch gemm_one(float* out, const float* W, int d) { return GemmBatch{1, {W, nullptr, nullptr}, {out, nullptr, nullptr}, {d, 0, 0}}; }

void gemm(float* out, const float* X, const float* W, int M, int n, int d, cudaStream_t s) {
  gemm_batch(gemm_one(out, W, d), X, M, n, s);
}

void gemm_variant(int variant, float* out, const float* X, const float* W, int M, int n, int d, cudaStream_t s) {
  gemm_batch_variant(variant, gemm_one(out, W, d), X, M, n, s);
}

}  // namespace akv::cuda::dev
