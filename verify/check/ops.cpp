#include "verify/check/ops.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>

#include "optimized/cpu/isa.hpp"
#include "optimized/cpu/kernels.hpp"
#include "optimized/cuda/arith/dot.hpp"
#include "optimized/cuda/arith/elementwise.hpp"
#include "optimized/cuda/arith/hd.hpp"
#include "optimized/composed/op_set.hpp"
#include "optimized/cuda/emu/emu_ops.hpp"
#include "reference/ops.hpp"

namespace akv::check {

namespace {

// Reference rows of the one-row ops; shared by the tables whose ops are the reference's.
void ref_rope_rows(float* x, int M, int heads, int hd, int pos0, const float* cos, const float* sin) {
  const size_t half = static_cast<size_t>(hd / 2), row = static_cast<size_t>(heads) * hd;
  for (int r = 0; r < M; ++r) ref::rope(x + r * row, heads, hd, cos + (pos0 + r) * half, sin + (pos0 + r) * half);
}

OpTable reference_table() {
  OpTable t;
  t.label = "reference";
  t.matmul = [](float* Y, const float* X, const float* W, int M, int n, int d) {
    for (int m = 0; m < M; ++m) ref::matmul(Y + static_cast<size_t>(m) * d, X + static_cast<size_t>(m) * n, W, n, d);
  };
  t.dot = [](const float* x, const float* y, int n) {
    float out;
    ref::matmul(&out, x, y, n, 1);
    return out;
  };
  t.rmsnorm = [](float* out, const float* x, const float* w, int M, int n, float eps) {
    for (int m = 0; m < M; ++m) ref::rmsnorm(out + static_cast<size_t>(m) * n, x + static_cast<size_t>(m) * n, w, n, eps);
  };
  t.rope = ref_rope_rows;
  t.attention = [](float* out, const float* q, const float* k, const float* v, int M, int pos0, int heads, int kvh, int hd) {
    const size_t qd = static_cast<size_t>(heads) * hd;
    std::vector<float> att(static_cast<size_t>(pos0 + M));
    for (int r = 0; r < M; ++r)
      for (int h = 0; h < heads; ++h) {
        const size_t kv = static_cast<size_t>(h / (heads / kvh)) * hd;
        ref::attention_head(out + r * qd + h * hd, q + r * qd + h * hd, k + kv, v + kv, pos0 + r + 1, kvh * hd, hd, att.data());
      }
  };
  t.swiglu = [](float* out, const float* g, const float* u, int n) { ref::swiglu(out, g, u, n); };
  t.add = [](float* x, const float* y, int n) { ref::add_inplace(x, y, n); };
  t.attention_rounding = bounds::attn_rounding_reference;
  return t;
}

OpTable cpu_table(cpu::Isa isa) {
  OpTable t;
  t.label = cpu::isa_name(isa);
  if (!cpu::isa_supported(isa)) {
    t.unavailable = "this CPU lacks " + t.label;
    return t;
  }
  const cpu::Kernels* K = &cpu::kernels_for(isa);
  t.matmul = [K](float* Y, const float* X, const float* W, int M, int n, int d) {
    const std::vector<float> w(W, W + static_cast<size_t>(d) * n);
    const cpu::PackedMatrix P = cpu::pack_rows({&w}, n);
    K->matmul(X, n, M, P, 0, P.panels(), Y, d);
  };
  t.dot = K->dot;
  t.rmsnorm = [K](float* out, const float* x, const float* w, int M, int n, float eps) {
    for (int m = 0; m < M; ++m) K->rmsnorm(out + static_cast<size_t>(m) * n, x + static_cast<size_t>(m) * n, w, n, eps);
  };
  t.rope = [K](float* x, int M, int heads, int hd, int pos0, const float* cos, const float* sin) {
    const size_t half = static_cast<size_t>(hd / 2), row = static_cast<size_t>(heads) * hd;
    for (int r = 0; r < M; ++r) K->rope(x + r * row, heads, hd, cos + (pos0 + r) * half, sin + (pos0 + r) * half);
  };
  // One item per (row, KV head): K4 gives every row the bits it gets alone.
  t.attention = [K](float* out, const float* q, const float* k, const float* v, int M, int pos0, int heads, int kvh, int hd) {
    const int group = heads / kvh;
    const size_t qd = static_cast<size_t>(heads) * hd;
    for (int r = 0; r < M; ++r)
      for (int g = 0; g < kvh; ++g) {
        const size_t at = r * qd + static_cast<size_t>(g) * group * hd;
        K->attention(cpu::AttnArgs{q + at, k + g * hd, v + g * hd, out + at, pos0 + r, kvh * hd, hd, group,
                                   1.0f / std::sqrt(static_cast<float>(hd))});
      }
  };
  t.swiglu = K->swiglu;
  t.add = K->add;
  t.attention_rounding = [](int n) { return bounds::attn_rounding_online(n, cpu::kKeyBlock); };
  return t;
}

OpTable cuda_emu_table() {
  namespace emu = cuda::emu;
  OpTable t;
  t.label = "cuda_emu";
  t.matmul = [](float* Y, const float* X, const float* W, int M, int n, int d) { emu::gemm(Y, X, W, M, n, d); };
  t.dot = [](const float* x, const float* y, int n) { return cuda::dot_chain(x, y, n); };
  t.rmsnorm = emu::rmsnorm_rows;
  t.rope = emu::rope_rows;
  t.attention = [](float* out, const float* q, const float* k, const float* v, int M, int pos0, int heads, int kvh, int hd) {
    emu::attention_rows(out, q, k, v, M, pos0, heads, kvh, hd);
  };
  t.swiglu = [](float* out, const float* g, const float* u, int n) {
    for (int j = 0; j < n; ++j) out[j] = cuda::swiglu(g[j], u[j]);
  };
  t.add = [](float* x, const float* y, int n) {
    for (int j = 0; j < n; ++j) x[j] = cuda::residual(x[j], y[j]);
  };
  t.attention_rounding = [](int n) { return bounds::attn_rounding_split(n, cuda::kKvSplit); };
  return t;
}

}  // namespace

const OpTable& reference_ops() {
  static const OpTable t = reference_table();
  return t;
}

std::vector<OpTable> op_tables() {
  std::vector<OpTable> all{reference_table()};
  for (cpu::Isa i : cpu::all_isas()) all.push_back(cpu_table(i));
  all.push_back(cuda_emu_table());
  return all;
}

OpTable plugin_op_table(std::shared_ptr<const OpSet> ops) {
  OpTable t;
  t.label = "plugin_";
  for (char c : ops->name()) t.label += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  // Scratch of `op` for these sizes, NaN-filled so stale data cannot hide (GT2).
  auto scratch = [ops](uint32_t op, int M, int n, int d) {
    return std::vector<float>(std::max<size_t>(ops->scratch_floats(op, M, n, d), 1),
                              std::numeric_limits<float>::quiet_NaN());
  };
  t.matmul = [ops, scratch](float* Y, const float* X, const float* W, int M, int n, int d) {
    const akv_kernels& k = ops->ops();
    void* prepared = k.prepare_weight != nullptr ? k.prepare_weight(k.ctx, W, d, n) : nullptr;
    std::vector<float> s = scratch(AKV_OP_MATMUL, M, n, d);
    k.matmul(k.ctx, Y, static_cast<size_t>(d), X, static_cast<size_t>(n), M, W, prepared, n, d, s.data());
    if (prepared != nullptr) k.release_weight(k.ctx, prepared);
  };
  t.dot = [m = t.matmul](const float* x, const float* y, int n) {
    float out;
    m(&out, x, y, 1, n, 1);
    return out;
  };
  t.rmsnorm = [ops](float* out, const float* x, const float* w, int M, int n, float eps) {
    const akv_kernels& k = ops->ops();
    k.rmsnorm(k.ctx, out, x, w, M, n, eps);
  };
  t.rope = [ops](float* x, int M, int heads, int hd, int pos0, const float* cos, const float* sin) {
    const akv_kernels& k = ops->ops();
    std::vector<int32_t> pos(static_cast<size_t>(M));
    for (int r = 0; r < M; ++r) pos[static_cast<size_t>(r)] = pos0 + r;
    k.rope(k.ctx, x, static_cast<size_t>(heads) * hd, M, heads, hd, pos.data(), cos, sin);
  };
  t.attention = [ops, scratch](float* out, const float* q, const float* kk, const float* v, int M, int pos0, int heads,
                               int kvh, int hd) {
    const akv_kernels& k = ops->ops();
    const size_t qd = static_cast<size_t>(heads) * hd, kvd = static_cast<size_t>(kvh) * hd;
    std::vector<float> s = scratch(AKV_OP_ATTENTION, M, pos0 + M, static_cast<int>(qd));
    k.attention(k.ctx, out, qd, q, qd, kk, v, kvd, nullptr, M, pos0, heads, kvh, hd,
                1.0f / std::sqrt(static_cast<float>(hd)), s.data());
  };
  t.swiglu = [ops](float* out, const float* g, const float* u, int n) {
    const akv_kernels& k = ops->ops();
    k.swiglu(k.ctx, out, g, u, n);
  };
  t.add = [ops](float* x, const float* y, int n) {
    const akv_kernels& k = ops->ops();
    k.add(k.ctx, x, y, n);
  };
  if (ops->own() & AKV_OP_ATTENTION)
    t.attention_rounding = bounds::attn_rounding_any_block;
  else
    t.attention_rounding = bounds::attn_rounding_reference;
  return t;
}

std::vector<OpTable> optimized_op_tables(const std::string& backend) {
  std::vector<OpTable> out;
  for (OpTable& t : op_tables()) {
    const bool cpu = t.label != "reference" && t.label != "cuda_emu";
    if (t.label == "reference") continue;
    if (backend.empty() || (backend == "cpu" && cpu) || (backend == "cuda-emu" && t.label == "cuda_emu"))
      out.push_back(std::move(t));
  }
  return out;
}

}  // namespace akv::check
