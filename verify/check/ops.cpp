#include "verify/check/ops.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>

#include "optimized/composed/op_set.hpp"
#include "optimized/cpu/c_kernels.hpp"
#include "optimized/cpu/isa.hpp"
#include "optimized/cpu/kernels.hpp"
#include "optimized/cuda/arith/dot.hpp"
#include "optimized/cuda/arith/hd.hpp"
#include "optimized/cuda/emu/c_kernels.hpp"
#include "reference/c_kernels.hpp"

namespace akv::check {

namespace {

using Rounding = std::function<bounds::AttnRounding(int n_keys)>;
using Dot = std::function<float(const float* x, const float* y, int n)>;

// The one constructor path of every table: a view of a kernel table through the C ABI
// (include/akv/kernels.h), with prepared weights and NaN-filled scratch, one thread. `dot`,
// when set, is the backend's own reduction; else a one-row matmul.
OpTable view(std::shared_ptr<const OpSet> ops, std::string label, Rounding rounding, Dot dot = {}) {
  OpTable t;
  t.label = std::move(label);
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
  t.dot = dot ? std::move(dot) : Dot([m = t.matmul](const float* x, const float* y, int n) {
    float out;
    m(&out, x, y, 1, n, 1);
    return out;
  });
  t.rmsnorm = [ops](float* out, const float* x, const float* w, int M, int n, float eps) {
    const akv_kernels& k = ops->ops();
    k.rmsnorm(k.ctx, out, x, w, M, n, eps);
  };
  t.rope = [ops](float* x, int M, int heads, int hd, const int32_t* pos, const float* cos, const float* sin) {
    const akv_kernels& k = ops->ops();
    k.rope(k.ctx, x, static_cast<size_t>(heads) * hd, M, heads, hd, pos, cos, sin);
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
  t.kv_encode = [](KvType type, const float* x, int n, uint8_t* out) { kv_encode_row(type, x, n, out); };
  t.attention_rounding = std::move(rounding);
  t.set = std::move(ops);
  return t;
}

OpTable reference_table() {
  return view(std::make_shared<const OpSet>(reference_kernels(), nullptr, "reference"), "reference",
              bounds::attn_rounding_reference);
}

// The ISA's akv_kernels table (the one `akv gate` checks as a plugin, GT9) at one thread: K4
// and K8 give every row and item the bits it gets alone; dot is the kernels' own (K2).
OpTable cpu_table(cpu::Isa isa) {
  if (!cpu::isa_supported(isa)) {
    OpTable t;
    t.label = cpu::isa_name(isa);
    t.unavailable = "this CPU lacks " + t.label;
    return t;
  }
  auto table = std::make_shared<cpu::CpuKernelTable>(isa, 1);
  OpTable t = view(std::make_shared<const OpSet>(table->table(), table, cpu::isa_name(isa)), cpu::isa_name(isa),
                   [](int n) { return bounds::attn_rounding_online(n, cpu::kKeyBlock); }, cpu::kernels_for(isa).dot);
  t.kv_encode = cpu::kernels_for(isa).kv_encode;  // K16
  return t;
}

OpTable cuda_emu_table() {
  return view(std::make_shared<const OpSet>(cuda::emu::emu_kernels(), nullptr, "cuda_emu"), "cuda_emu",
              [](int n) { return bounds::attn_rounding_split(n, cuda::kKvSplit); },
              [](const float* x, const float* y, int n) { return cuda::dot_chain(x, y, n); });
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
  std::string label = "plugin_";
  for (char c : ops->name()) label += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  // A plugin's attention is modelled as the gate models it: any block size.
  const bool own_attention = ops->own() & AKV_OP_ATTENTION;
  return view(ops, std::move(label), own_attention ? bounds::attn_rounding_any_block : bounds::attn_rounding_reference);
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
