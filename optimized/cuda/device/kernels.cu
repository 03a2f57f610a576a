// The CUDA kernels. Built with -fmad=false -ftz=false -prec-div=true -prec-sqrt=true and no
// fast-math (G1); no atomics anywhere; every reduction's order is fixed by arith/*.hpp.
#include <algorithm>
#include <stdexcept>
#include <string>

#include "optimized/cuda/arith/elementwise.hpp"
#include "optimized/cuda/arith/rmsnorm.hpp"
#include "optimized/cuda/device/kernels.cuh"

namespace akv::cuda::dev {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string("CUDA: ") + what + ": " + cudaGetErrorString(e));
}

namespace {

unsigned blocks_for(size_t n, unsigned threads) { return static_cast<unsigned>((n + threads - 1) / threads); }

// G3. One warp per row: lane partials, the tree on lane 0 (the same tree_sum32 as the host).
__global__ void rmsnorm_kernel(float* out, const float* x, const float* w, int n, float eps) {
  __shared__ float part[kWarpLanes];
  __shared__ float inv;
  const int t = threadIdx.x;
  const float* xr = x + static_cast<size_t>(blockIdx.x) * n;
  float* o = out + static_cast<size_t>(blockIdx.x) * n;
  part[t] = rms_lane_partial(xr, n, t);
  __syncthreads();
  if (t == 0) inv = rms_inv(tree_sum32(part), n, eps);
  __syncthreads();
  for (int j = t; j < n; j += kWarpLanes) o[j] = rms_apply(xr[j], inv, w[j]);
}

// G4. One thread per (row, head, pair).
__global__ void rope_kernel(float* x, int M, int n_heads, int head_dim, int pos0, const int* pos_dev,
                            const float* cos, const float* sin) {
  if (pos_dev != nullptr) pos0 = *pos_dev;
  const int half = head_dim / 2;
  const size_t idx = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= static_cast<size_t>(M) * n_heads * half) return;
  const int i = static_cast<int>(idx % half);
  const size_t rh = idx / half;  // row * n_heads + head
  const int r = static_cast<int>(rh / n_heads);
  float* v = x + rh * head_dim;
  const size_t t = static_cast<size_t>(pos0 + r) * half + i;
  rope_pair(v[i], v[i + half], cos[t], sin[t], &v[i], &v[i + half]);
}

__global__ void write_rows_kernel(float* dst, const float* src, size_t n, int width, int pos0, const int* pos_dev) {
  const size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (pos_dev != nullptr) pos0 = *pos_dev;
  if (i < n) dst[static_cast<size_t>(pos0) * width + i] = src[i];
}

__global__ void embed_kernel(float* x, const int* tokens, const float* emb, int M, int d) {
  const size_t idx = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (idx >= static_cast<size_t>(M) * d) return;
  x[idx] = emb[static_cast<size_t>(tokens[idx / d]) * d + idx % d];
}

__global__ void swiglu_kernel(float* g, const float* u, size_t n) {
  const size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) g[i] = akv::cuda::swiglu(g[i], u[i]);  // not the launcher below
}

__global__ void add_kernel(float* x, const float* y, size_t n) {
  const size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) x[i] = residual(x[i], y[i]);
}

__global__ void fill_kernel(float* p, size_t n, float value) {
  const size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) p[i] = value;
}

}  // namespace

void rmsnorm_rows(float* out, const float* x, const float* w, int M, int n, float eps, cudaStream_t s) {
  rmsnorm_kernel<<<M, kWarpLanes, 0, s>>>(out, x, w, n, eps);
  check(cudaGetLastError(), "rmsnorm");
}

void rope_rows(float* x, int M, int n_heads, int head_dim, int pos0, const float* cos, const float* sin,
               cudaStream_t s, const int* pos_dev) {
  const size_t n = static_cast<size_t>(M) * n_heads * (head_dim / 2);
  if (n == 0) return;
  rope_kernel<<<blocks_for(n, 256), 256, 0, s>>>(x, M, n_heads, head_dim, pos0, pos_dev, cos, sin);
  check(cudaGetLastError(), "rope");
}

void write_rows(float* dst, const float* src, int M, int width, int pos0, cudaStream_t s, const int* pos_dev) {
  const size_t n = static_cast<size_t>(M) * width;
  if (n == 0) return;
  write_rows_kernel<<<blocks_for(n, 256), 256, 0, s>>>(dst, src, n, width, pos0, pos_dev);
  check(cudaGetLastError(), "write rows");
}

void embed(float* x, const int* tokens, const float* emb, int M, int d, cudaStream_t s) {
  const size_t n = static_cast<size_t>(M) * d;
  embed_kernel<<<blocks_for(n, 256), 256, 0, s>>>(x, tokens, emb, M, d);
  check(cudaGetLastError(), "embed");
}

void swiglu(float* g, const float* u, size_t n, cudaStream_t s) {
  swiglu_kernel<<<blocks_for(n, 256), 256, 0, s>>>(g, u, n);
  check(cudaGetLastError(), "swiglu");
}

void add(float* x, const float* y, size_t n, cudaStream_t s) {
  add_kernel<<<blocks_for(n, 256), 256, 0, s>>>(x, y, n);
  check(cudaGetLastError(), "add");
}

void fill(float* p, size_t n, float value, cudaStream_t s) {
  if (n == 0) return;
  fill_kernel<<<blocks_for(n, 256), 256, 0, s>>>(p, n, value);
  check(cudaGetLastError(), "fill");
}

}  // namespace akv::cuda::dev
