#include "optimized/cuda/emu/c_kernels.hpp"

#include <algorithm>
#include <vector>

#include "optimized/cuda/arith/elementwise.hpp"
#include "optimized/cuda/emu/emu_ops.hpp"

namespace akv::cuda::emu {

namespace {

// The launches take dense rows: strided operands go through a dense copy (values unchanged).
std::vector<float> dense(const float* x, size_t ld, int32_t M, int32_t w) {
  std::vector<float> out(static_cast<size_t>(M) * w);
  for (int32_t m = 0; m < M; ++m) std::copy_n(x + m * ld, w, out.begin() + static_cast<size_t>(m) * w);
  return out;
}
void scatter(float* y, size_t ld, const std::vector<float>& src, int32_t M, int32_t w) {
  for (int32_t m = 0; m < M; ++m) std::copy_n(src.begin() + static_cast<size_t>(m) * w, w, y + m * ld);
}

void matmul(void*, float* Y, size_t ldy, const float* X, size_t ldx, int32_t M, const float* W, const void*, int32_t n,
            int32_t d, float*) {
  const std::vector<float> x = dense(X, ldx, M, n);
  std::vector<float> y(static_cast<size_t>(M) * d);
  gemm(y.data(), x.data(), W, M, n, d);
  scatter(Y, ldy, y, M, d);
}

void rmsnorm(void*, float* out, const float* x, const float* w, int32_t M, int32_t n, float eps) {
  rmsnorm_rows(out, x, w, M, n, eps);
}

void rope(void*, float* x, size_t ldx, int32_t M, int32_t heads, int32_t hd, const int32_t* pos, const float* cos,
          const float* sin) {
  for (int32_t m = 0; m < M; ++m) rope_rows(x + m * ldx, 1, heads, hd, pos[m], cos, sin);
}

void swiglu(void*, float* out, const float* g, const float* u, int32_t n) {
  for (int32_t j = 0; j < n; ++j) out[j] = cuda::swiglu(g[j], u[j]);
}
void add(void*, float* x, const float* y, int32_t n) {
  for (int32_t j = 0; j < n; ++j) x[j] = cuda::residual(x[j], y[j]);
}

void attention(void*, float* out, size_t ldo, const float* q, size_t ldq, const float* k, const float* v, size_t ldkv,
               const uint8_t* mask, int32_t M, int32_t pos0, int32_t heads, int32_t kvh, int32_t hd, float, float*) {
  const int32_t qd = heads * hd, kvd = kvh * hd, n = pos0 + M;
  const std::vector<float> qq = dense(q, ldq, M, qd), kk = dense(k, ldkv, n, kvd), vv = dense(v, ldkv, n, kvd);
  std::vector<float> o(static_cast<size_t>(M) * qd);
  attention_rows(o.data(), qq.data(), kk.data(), vv.data(), M, pos0, heads, kvh, hd, mask);
  scatter(out, ldo, o, M, qd);
}

const akv_kernels kTable = {
    .abi_version = AKV_KERNELS_ABI_VERSION,
    .name = "cuda-emu",
    .provides = AKV_OP_ALL & ~AKV_OP_EVICT,
    .ctx = nullptr,
    .set_threads = nullptr,
    .scratch_floats = nullptr,
    .prepare_weight = nullptr,
    .release_weight = nullptr,
    .matmul = matmul,
    .rmsnorm = rmsnorm,
    .rope = rope,
    .swiglu = swiglu,
    .add = add,
    .attention = attention,
    .evict = nullptr,
};

}  // namespace

const akv_kernels* emu_kernels() { return &kTable; }

}  // namespace akv::cuda::emu
