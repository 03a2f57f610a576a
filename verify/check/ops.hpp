// The op tables the per-op checks run over (spec/bounds.md B10, B14; spec/kernels-cpu.md K12;
// spec/kernels-cuda.md G11): one backend's six ops on raw float arrays, with the rounding
// model each declares. There is one kernel table, OpSet (the C ABI table akv_kernels made
// whole, optimized/composed/op_set.hpp): the reference's, the cpu kernels' per ISA, cuda-emu's
// and every plugin's. An OpTable is the in-process view of one, built through one path
// (a view of an OpSet with a label, a rounding model and a dot): it labels the table, names its
// rounding model, and holds each op as a std::function, so a test can break one op of an
// intact table (the checks' teeth); the OpSet itself stays in `set`, for the invariance
// properties (op_props.hpp) that need threads, scratch or a weight prepared once.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "reference/kv_types.hpp"
#include "verify/bounds/op_bounds.hpp"

namespace akv {
class OpSet;
}

namespace akv::check {

/// One backend's ops, a view of its kernel table. Layouts are row-major; heads are contiguous
/// within a row.
struct OpTable {
  std::string label;        // a valid test name: "reference", "portable", "avx2", "avx512", "cuda_emu"
  std::string unavailable;  // "" when this build and machine run it; else why not
  std::shared_ptr<const OpSet> set;  // the kernel table viewed (null when unavailable)

  /// Y (M, d) = X (M, n) W^T, W (d, n) (spec/model.md M8).
  std::function<void(float* Y, const float* X, const float* W, int M, int n, int d)> matmul;
  /// The dot product of x, y (n,) as the backend reduces attention scores (B4).
  std::function<float(const float* x, const float* y, int n)> dot;
  /// out (M, n) = RMSNorm of each row of x (M, n) with weight w (n,) (M7).
  std::function<void(float* out, const float* x, const float* w, int M, int n, float eps)> rmsnorm;
  /// Rotates x (M, heads * hd) in place, row r at position pos[r] (M,), with the one table's
  /// rows cos, sin (positions, hd / 2) (M6).
  std::function<void(float* x, int M, int heads, int hd, const int32_t* pos, const float* cos, const float* sin)> rope;
  /// Causal GQA attention (M9) of M queries q (M, heads * hd) at positions pos0 .. pos0+M-1
  /// over cache rows k, v (>= pos0 + M, kv_heads * hd); out (M, heads * hd).
  std::function<void(float* out, const float* q, const float* k, const float* v, int M, int pos0, int heads,
                     int kv_heads, int hd)>
      attention;
  /// out (n,) = silu(gate) * up (M10).
  std::function<void(float* out, const float* gate, const float* up, int n)> swiglu;
  /// x (n,) += y (n,) (M11).
  std::function<void(float* x, const float* y, int n)> add;
  /// A K or V row x (n,) stored as cache type t into out (spec/state.md S6, S7): the cpu
  /// kernels' own encoder (K16); the reference's kv_encode_row for every other table (the
  /// composed forward stores through the cache, reference/kv_cache.hpp).
  std::function<void(KvType t, const float* x, int n, uint8_t* out)> kv_encode;

  /// The rounding model. matmul and dot: any conforming summation order (within B1 of the
  /// exact value; scores within B4); RMSNorm: any order (B2); RoPE, SwiGLU and the residual
  /// add: the reference's operations, bit for bit (B3, B8 with distance 0). Attention: the
  /// B14 counts of this kernel over n_keys keys.
  std::function<bounds::AttnRounding(int n_keys)> attention_rounding;
};

/// The reference's ops (spec/model.md), the side every other table is compared with.
const OpTable& reference_ops();

/// Every op table akv knows, in a stable order (reference, cpu by ISA, cuda-emu), available
/// or not (an ISA this CPU lacks says so in `unavailable`): views of reference_kernels(),
/// cpu::CpuKernelTable (one thread; dot: the kernels' own, K2) and cuda::emu::emu_kernels()
/// (dot: dot_chain), the tables `akv gate` checks as akv's own plugins (GT9).
std::vector<OpTable> op_tables();

/// The tables other than the reference: the optimized kernels checked against it, those of
/// the cpu backend (`cpu`, one per ISA) or cuda-emu (`cuda-emu`); all when `backend` is "".
std::vector<OpTable> optimized_op_tables(const std::string& backend = "");

/// A kernel library's table (spec/gate.md GT1, loaded by load_kernels) as an op table, label
/// "plugin_NAME": its ops where it provides them, the reference's elsewhere, through the C ABI
/// (include/akv/kernels.h) with prepared weights and NaN-filled scratch, one thread, as every
/// table. Its attention is modelled as the gate models a plugin's (attn_rounding_any_block);
/// dot is a one-row matmul.
OpTable plugin_op_table(std::shared_ptr<const OpSet> ops);

}  // namespace akv::check
