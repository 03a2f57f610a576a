// The GEMM kernels (spec/kernels-cuda.md G2): one template, instantiated for each variant of
// arith/gemm.hpp, and the launcher that picks a variant by shape. Every variant computes each
// output as dot_chain (k ascending from +0, one fma per k, in one thread's registers), so the
// choice changes the speed, never a bit. No split-K, no atomics.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "optimized/cuda/arith/gemm.hpp"
#include "optimized/cuda/device/kernels.cuh"

namespace akv::cuda::dev {

namespace {

constexpr int kGemmThreads = 256;

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
template <int BM, int BN, int BK, int TM, int TN, bool kVec>
__global__ void __launch_bounds__(kGemmThreads)
    gemm_kernel(float* __restrict__ out, const float* __restrict__ X, const float* __restrict__ W, int M, int n,
                int d) {
  static_assert((BM / TM) * (BN / TN) == kGemmThreads, "256 threads per block");
  static_assert(TM % 4 == 0 && TN % 4 == 0 && BK % 4 == 0, "float4 fragments");
  constexpr int KQ = BK / 4;                                  // float4s per row of a k-tile
  constexpr int NA = (BM * KQ + kGemmThreads - 1) / kGemmThreads;  // staged float4s per thread
  constexpr int NB = (BN * KQ + kGemmThreads - 1) / kGemmThreads;
  constexpr int RG = TM / 4, CG = TN / 4;
  __shared__ __align__(16) float xs[2][BK][BM + 4];
  __shared__ __align__(16) float ws[2][BK][BN + 4];
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
  for (int t = 0; t < tiles; ++t) {
    const int buf = t & 1, kb = min(BK, n - t * BK);
    if (t + 1 < tiles) load((t + 1) * BK);
#pragma unroll
    for (int kk = 0; kk < BK; ++kk) {
      if (kk < kb) {  // kb < BK only in the last tile
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
      }
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
void launch(bool vec, float* out, const float* X, const float* W, int M, int n, int d, cudaStream_t s) {
  const dim3 grid((d + BN - 1) / BN, (M + BM - 1) / BM);
  if (vec)
    gemm_kernel<BM, BN, BK, TM, TN, true><<<grid, kGemmThreads, 0, s>>>(out, X, W, M, n, d);
  else
    gemm_kernel<BM, BN, BK, TM, TN, false><<<grid, kGemmThreads, 0, s>>>(out, X, W, M, n, d);
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

int sm_count() {
  static const int n = [] {
    int dev = 0, v = 0;
    if (cudaGetDevice(&dev) != cudaSuccess || cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess)
      return 1;
    return std::max(v, 1);
  }();
  return n;
}

}  // namespace

int gemm_variant_for(int M, int d) {
  // Speed only (every variant gives the same bits): the largest tile that still fills the
  // GPU with one block per multiprocessor, else the smallest.
  for (int v = 0; v < kGemmVariantCount; ++v) {
    const GemmVariant& g = kGemmVariants[v];
    const long blocks = static_cast<long>((M + g.bm - 1) / g.bm) * ((d + g.bn - 1) / g.bn);
    if (blocks >= sm_count()) return v;
  }
  return kGemmVariantCount - 1;
}

void gemm_variant(int variant, float* out, const float* X, const float* W, int M, int n, int d, cudaStream_t s) {
  if (M <= 0 || d <= 0) return;
  const bool vec = n % 4 == 0 && aligned16(X) && aligned16(W) && aligned16(out);
  switch (variant) {
    case 0: launch<128, 128, 8, 8, 8>(vec, out, X, W, M, n, d, s); break;
    case 1: launch<128, 64, 8, 8, 4>(vec, out, X, W, M, n, d, s); break;
    case 2: launch<64, 128, 8, 4, 8>(vec, out, X, W, M, n, d, s); break;
    case 3: launch<64, 64, 16, 4, 4>(vec, out, X, W, M, n, d, s); break;
    default: check(cudaErrorInvalidValue, "gemm variant");
  }
  check(cudaGetLastError(), "gemm");
}
static_assert(kGemmVariantCount == 4, "gemm_variant's switch instantiates every variant of arith/gemm.hpp");

void gemm(float* out, const float* X, const float* W, int M, int n, int d, cudaStream_t s) {
  gemm_variant(gemm_variant_for(M, d), out, X, W, M, n, d, s);
}

}  // namespace akv::cuda::dev
