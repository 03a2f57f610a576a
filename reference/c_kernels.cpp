#include "reference/c_kernels.hpp"

#include "reference/ops.hpp"

namespace akv {

namespace {

size_t scratch(void*, uint32_t op, int32_t, int32_t n, int32_t) {
  return op == AKV_OP_ATTENTION ? static_cast<size_t>(n) : 0;  // the scores of one (row, head)
}

void matmul(void*, float* Y, size_t ldy, const float* X, size_t ldx, int32_t M, const float* W, const void*, int32_t n,
            int32_t d, float*) {
  for (int32_t m = 0; m < M; ++m) ref::matmul(Y + m * ldy, X + m * ldx, W, n, d);
}

void rmsnorm(void*, float* out, const float* x, const float* w, int32_t M, int32_t n, float eps) {
  for (int32_t m = 0; m < M; ++m) ref::rmsnorm(out + static_cast<size_t>(m) * n, x + static_cast<size_t>(m) * n, w, n, eps);
}

void rope(void*, float* x, size_t ldx, int32_t M, int32_t heads, int32_t hd, const int32_t* pos, const float* cos,
          const float* sin) {
  const size_t half = static_cast<size_t>(hd / 2);
  for (int32_t m = 0; m < M; ++m) ref::rope(x + m * ldx, heads, hd, cos + pos[m] * half, sin + pos[m] * half);
}

void swiglu(void*, float* out, const float* g, const float* u, int32_t n) { ref::swiglu(out, g, u, n); }
void add(void*, float* x, const float* y, int32_t n) { ref::add_inplace(x, y, n); }

// One (row, query head) at a time through M9's three passes; the scale is the reference's own
// (1 / sqrt(head_dim) in float, the value the ABI passes).
void attention(void*, float* out, size_t ldo, const float* q, size_t ldq, const float* k, const float* v, size_t ldkv,
               const uint8_t* mask, int32_t M, int32_t pos0, int32_t heads, int32_t kvh, int32_t hd, float, float* att) {
  const int32_t group = heads / kvh;
  for (int32_t m = 0; m < M; ++m)
    for (int32_t h = 0; h < heads; ++h) {
      const size_t kv = static_cast<size_t>(h / group) * hd;
      ref::attention_head(out + m * ldo + static_cast<size_t>(h) * hd, q + m * ldq + static_cast<size_t>(h) * hd, k + kv,
                          v + kv, pos0 + m + 1, static_cast<int>(ldkv), hd, att, mask);
    }
}

int32_t evict(void*, const akv_cache_view*, int32_t begin, int32_t) { return begin; }

const akv_kernels kTable = {
    .abi_version = AKV_KERNELS_ABI_VERSION,
    .name = "reference",
    .provides = AKV_OP_ALL,
    .ctx = nullptr,
    .set_threads = nullptr,
    .scratch_floats = scratch,
    .prepare_weight = nullptr,
    .release_weight = nullptr,
    .matmul = matmul,
    .rmsnorm = rmsnorm,
    .rope = rope,
    .swiglu = swiglu,
    .add = add,
    .attention = attention,
    .evict = evict,
};

}  // namespace

const akv_kernels* reference_kernels() { return &kTable; }

}  // namespace akv
