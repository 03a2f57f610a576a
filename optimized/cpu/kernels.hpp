// The CPU kernels, one table per ISA (spec/kernels-cpu.md K0-K7). Every entry computes the
// same bits on every ISA: the reduction orders are the canonical ones of the spec, written
// once in kernels_impl.hpp and compiled per ISA.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <memory>
#include <vector>

#include "optimized/cpu/isa.hpp"
#include "reference/kv_types.hpp"
#include "reference/stored_weights.hpp"

namespace akv::cpu {

/// Width of a weight panel, of the canonical dot's lane set, and of every SIMD step (K1, K2).
inline constexpr int kLanes = 16;
/// Matmul k-block: each output sums k in blocks [b*kMatmulBlock, (b+1)*kMatmulBlock), one FMA
/// chain per block, the block sums added in order (K1). Fixed, so no output depends on M or
/// the tiling; 64 brings the rounding error from gamma_n to gamma_{64 + ceil(n/64) - 1}.
inline constexpr int kMatmulBlock = 64;
/// Attention key-block size; blocks are [b*kKeyBlock, (b+1)*kKeyBlock) in absolute positions (K4).
inline constexpr int kKeyBlock = 64;
/// The head dims K4's attention gives code paths of their own (the switches of
/// accumulate_keys_any, accumulate_states and attention's lane path in kernels_impl.hpp);
/// another multiple of kLanes takes the lane-set loop, any other head dim the scalar tail.
inline constexpr std::array<int, 3> kAttentionPathHeadDims = {32, 64, 128};
/// Head dims that reach every attention and RoPE path: each of kAttentionPathHeadDims, a
/// multiple of kLanes without a path of its own (48), and head dims with a tail (8, 70). The
/// kernel checks, the gate and the property suite's drawn shapes take theirs from here, never
/// from literals, so a new path is checked once it is listed above.
inline constexpr std::array<int, 6> kAttentionCheckHeadDims = {8, kAttentionPathHeadDims[0], 3 * kLanes,
                                                               kAttentionPathHeadDims[1], 70, kAttentionPathHeadDims[2]};

struct FreeDeleter {
  void operator()(float* p) const { std::free(p); }
};

/// How a panel stores its weights (K15). kF32: the float32 values. The others keep the model
/// file's own blocks of 32 k (spec/gguf.md Q3-Q5), regrouped across the panel's 16 outputs, with
/// the fp16 scales widened to float32 once (exact, Q1); the matmul computes each weight from them
/// right before its FMA with the float operations of spec/gguf.md, so it is the float32 value
/// bit for bit.
enum class PanelFormat : uint8_t { kF32, kQ4_0, kQ4_1, kQ8_0 };

/// Bytes of one 32-k block of a quantized panel (16 outputs): the scales d (16 floats), for Q4_1
/// the minimums m (16 floats), then the quants: Q8_0 q[j][c] (32 x 16 int8, k = j), Q4_0 / Q4_1
/// the file's nibbles as words w[t][c] (4 x 16 little-endian uint32, nibble s at bits 4s is
/// k = 8t + s), so a lane's nibble is one shift and one lookup away. 0 for kF32.
constexpr int panel_block_bytes(PanelFormat f) {
  return f == PanelFormat::kQ8_0 ? 64 + 512 : f == PanelFormat::kQ4_1 ? 128 + 256 : f == PanelFormat::kQ4_0 ? 64 + 256 : 0;
}
/// k per quantized block (Q4_0, Q4_1, Q8_0), a divisor of kMatmulBlock.
inline constexpr int kQuantBlock = 32;
static_assert(kMatmulBlock % kQuantBlock == 0, "a matmul k-block holds whole quantized blocks");

/// Storage for panels: `bytes` rounded up to a multiple of 64, starting on a 64-byte boundary
/// (K15 "Where it is dequantized"), contents unspecified; from 4 MiB on, on huge pages
/// (allocate_streamed, speed only). Throws std::bad_alloc.
std::unique_ptr<float[], FreeDeleter> aligned_panel_storage(size_t bytes);

/// The panels of one model, taken one after another from shared blocks of 32 MiB (or one block
/// for a larger matrix), so a decode step streams its weights through 2 MiB pages whatever each
/// matrix's size (speed only). A panel block lives as long as any matrix taken from it.
class PanelArena {
 public:
  /// `bytes` rounded up to a multiple of 64, starting on a 64-byte boundary, contents
  /// unspecified. Throws std::bad_alloc.
  std::shared_ptr<float[]> take(size_t bytes);

 private:
  std::shared_ptr<unsigned char> block_;
  size_t used_ = 0, size_ = 0;
};

/// W (d, n) row-major repacked as ceil(d/16) panels of 16 outputs (K1): kF32 panel p holds
/// data[(p*n + k)*16 + c] = W[16p + c][k]; a quantized panel holds n/32 blocks of
/// panel_block_bytes (K15). Outputs 16p + c >= d are zero weights.
struct PackedMatrix {
  int n = 0;  // input width (the reduction length)
  int d = 0;  // outputs
  PanelFormat format = PanelFormat::kF32;
  std::shared_ptr<float[]> data;  // 64-byte aligned; raw bytes when quantized
  int panels() const { return (d + kLanes - 1) / kLanes; }
  /// Bytes of one panel.
  size_t panel_bytes() const {
    return format == PanelFormat::kF32 ? static_cast<size_t>(n) * kLanes * sizeof(float)
                                       : static_cast<size_t>(n / kQuantBlock) * panel_block_bytes(format);
  }
  const float* panel(int p) const { return data.get() + static_cast<size_t>(p) * n * kLanes; }
  const uint8_t* qpanel(int p) const { return reinterpret_cast<const uint8_t*>(data.get()) + p * panel_bytes(); }
};

/// Packs W (d, n) row-major, or the row-wise concatenation of several such matrices
/// (all with the same n): outputs of parts[0], then parts[1], ... Storage from `arena` if
/// given, else aligned_panel_storage.
PackedMatrix pack_rows(const std::vector<const std::vector<float>*>& parts, int n, PanelArena* arena = nullptr);

/// The rows of a stored matrix (reference/stored_weights.hpp) that a quantized panel can take.
bool packs_quantized(uint32_t ggml_type);

/// Packs stored matrices (all with `n` columns, each of one type packs_quantized accepts, the
/// same for all parts) into quantized panels (K15), outputs of parts[0] first. Rows are read
/// from the file's blocks through StoredMatrix::source_row. Throws std::invalid_argument for a
/// mix of types or an unsupported one. Storage as pack_rows.
PackedMatrix pack_stored(const std::vector<const StoredMatrix*>& parts, int n, PanelArena* arena = nullptr);

/// One attention work item (K4): the `group` query heads sharing one KV head, for `rows`
/// consecutive tokens of one session at absolute positions pos, pos + 1, ..., pos + rows - 1;
/// token t attends to cache rows [0, pos + t]. Every (token, head) output is computed exactly as
/// it would be alone (K4): the rows only share the passes over the cache.
struct AttnArgs {
  const float* q;     // token t: (group, head_dim) at q + t*q_stride, post-RoPE
  const float* k;     // cache keys of this KV head: row p at k + p*stride
  const float* v;     // cache values, same layout
  float* out;         // token t: (group, head_dim) at out + t*out_stride
  int pos = 0;        // absolute position of the first query token
  int stride = 0;     // kv_dim
  int head_dim = 0;
  int group = 1;
  float scale = 1.0f;  // 1/sqrt(head_dim), as the reference computes it
  int rows = 1;        // consecutive tokens in this item
  size_t q_stride = 0;    // floats between the tokens' queries (rows > 1)
  size_t out_stride = 0;  // floats between the tokens' outputs (rows > 1)
  const uint8_t* mask = nullptr;  // KVCache::mask(): nullptr, or (cache size,) bytes, 1 = masked (L3)
  /// The cache type (spec/state.md S5). f32: k and v above. Otherwise kq, vq: row p of this KV
  /// head at kq + p*row_bytes (the head's first value or Q8_0 block), read as float32 (S8, K16).
  KvType kv = KvType::kF32;
  const uint8_t* kq = nullptr;
  const uint8_t* vq = nullptr;
  size_t row_bytes = 0;
};
/// Most (token, query head) pairs one attention item may carry (rows * group).
inline constexpr int kMaxAttnStates = 96;

struct Kernels {
  Isa isa;
  /// Y[r, c] for rows [0, rows) and output columns of panels [p0, p1) (K1):
  /// Y[r*ldy + c] = sum_k X[r*ldx + k] * W[c][k]: one FMA chain per block of kMatmulBlock k from +0,
  /// the block sums added in block order.
  void (*matmul)(const float* X, size_t ldx, int rows, const PackedMatrix& W, int p0, int p1, float* Y,
                 size_t ldy);
  /// The canonical dot product of x, y (n,) (K2).
  float (*dot)(const float* x, const float* y, int n);
  /// out (n,) = x * (1/sqrt(dot(x,x)/n + eps)) * w (K3). out may alias x.
  void (*rmsnorm)(float* out, const float* x, const float* w, int n, float eps);
  /// In-place rotate-half RoPE of x (n_heads, head_dim) with one table row (K5).
  void (*rope)(float* x, int n_heads, int head_dim, const float* cos, const float* sin);
  /// One attention item (K4).
  void (*attention)(const AttnArgs& a);
  /// out (n,) = silu(gate) * up, elementwise (K6). out may alias gate.
  void (*swiglu)(float* out, const float* gate, const float* up, int n);
  /// x (n,) += y (n,) (K6).
  void (*add)(float* x, const float* y, int n);
  /// out (n,) = akv::exp(x) elementwise, vectorised with the same IEEE operations (K7).
  void (*exp)(float* out, const float* x, int n);
  /// K4 split over key blocks, for an item split_attention_applies() accepts; its outputs are
  /// attention()'s bit for bit. With n_blocks = ceil((pos + 1) / kKeyBlock) and G = group:
  /// phase 1, key blocks [b0, b1): scaled scores to s (G, n_blocks * kKeyBlock), block maxes to
  /// mb (G, n_blocks).
  void (*attention_split_scores)(const AttnArgs& a, int b0, int b1, float* s, float* mb);
  /// Phase 2, key blocks [b0, b1), after phase 1 of every block: with mr (G, n_blocks) the
  /// running maxes m' (split_running_maxes of phase 1's mb), exp(s_p - m') in place in s, the
  /// blocks' own sums to lb (G, n_blocks) and value sums to accb (G, n_blocks, head_dim).
  void (*attention_split_values)(const AttnArgs& a, int b0, int b1, float* s, const float* mr, float* lb, float* accb);
  /// Phase 3, after phase 2 of every block: with mr phase 2's running maxes, the folds in block
  /// order (alpha_b = exp(m'_{b-1} - m'_b)) and out = acc / l.
  void (*attention_split_fold)(const AttnArgs& a, const float* mr, const float* lb, const float* accb);
  /// A K or V row x (n,) stored as type t into out: kv_encode_row's bytes (spec/state.md S6, S7).
  void (*kv_encode)(KvType t, const float* x, int n, uint8_t* out);
  /// A stored row of n values as float32, as attention reads it (S8, K16): kv_decode_row's values.
  void (*kv_decode)(KvType t, const uint8_t* in, int n, float* out);
};

/// n_blocks of the split phases above: the key blocks ceil((pos + 1) / kKeyBlock) of item `a`.
inline int split_blocks(const AttnArgs& a) { return (a.pos + kKeyBlock) / kKeyBlock; }

/// Between the split's phases 1 and 2: per head h < G, the running max after each of the n_blocks
/// blocks, mr[h*n_blocks + b] = m'_b, K4 step 2's compares m' = (m < mb ? mb : m) over mb_0..mb_b
/// from m = -inf (spec/kernels-cpu.md K4 "Split over key blocks"). mb, mr: (G, n_blocks).
inline void split_running_maxes(const float* mb, int G, int n_blocks, float* mr) {
  for (int h = 0; h < G; ++h) {
    float m = -std::numeric_limits<float>::infinity();
    for (int b = 0; b < n_blocks; ++b) {
      const float x = mb[h * n_blocks + b];
      m = m < x ? x : m;
      mr[h * n_blocks + b] = m;
    }
  }
}

/// Whether the split phases above take item `a`: one token (rows == 1), no mask, head_dim in
/// kAttentionPathHeadDims, group <= 6 (the runs of states sharing a v_p load, K4).
inline bool split_attention_applies(const AttnArgs& a) {
  return a.rows == 1 && a.mask == nullptr && a.group >= 1 && a.group <= 6 &&
         (a.head_dim == 32 || a.head_dim == 64 || a.head_dim == 128);
}

const Kernels& kernels_portable();
const Kernels& kernels_avx2();
const Kernels& kernels_avx512();
/// kernels_avx512.cpp compiled against SIMDe, no native AVX-512 (K13): runs on any x86-64.
const Kernels& kernels_avx512_simde();

/// The table of `isa` (which must be supported by this CPU to be called).
const Kernels& kernels_for(Isa isa);

}  // namespace akv::cpu
