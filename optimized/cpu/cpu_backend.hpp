// The optimized CPU backend (spec/kernels-cpu.md): the reference model's semantics at SIMD
// speed on a small thread pool, with the invariance I1 by construction (K0-K8).
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <boost/align/aligned_allocator.hpp>

#include "optimized/cpu/isa.hpp"
#include "optimized/cpu/kernels.hpp"
#include "optimized/cpu/thread_pool.hpp"
#include "reference/backend.hpp"

namespace akv::cpu {

/// A scratch buffer 64 bytes aligned, as the packed panels and the KV cache rows are: a row of
/// a multiple of 16 floats then never has a SIMD load or store straddle two cache lines.
using Scratch = std::vector<float, boost::alignment::aligned_allocator<float, 64>>;

struct CpuOptions {
  std::string isa = "auto";  // portable | avx2 | avx512 | avx512_simde | auto ($AKV_ISA, else the best native)
  int threads = 0;           // 0: $AKV_THREADS if set, else 2
  /// Test seam (K13, K14: tests/test_simde.cpp, the localiser's replays in localise.cpp): this
  /// kernel table in place of the ISA's; `isa` is ignored; it must outlive the backend.
  const Kernels* kernels = nullptr;
};

/// One op step of the forward pass (K14): its output, `rows` rows of `width` floats, `ld`
/// floats apart. `layer` is -1 for the final RMSNorm and the classifier.
struct OpStep {
  const char* op;
  int layer;
  const float* data;
  int rows, width;
  size_t ld;
};

/// The model's matrices packed into panels (K1), shared by every backend of one model.
struct PackedModel {
  struct Layer {
    PackedMatrix wqkv;  // rows [Wq; Wk; Wv]: outputs (q_dim + 2*kv_dim)
    PackedMatrix wo;    // (hidden, q_dim)
    PackedMatrix w13;   // rows [W1; W3]: outputs (2*ffn)
    PackedMatrix w2;    // (hidden, ffn)
  };
  std::vector<Layer> layers;
  PackedMatrix wcls;  // (vocab, hidden)
};

/// The packed matrices of `m`, built once per model and shared while any backend holds them.
std::shared_ptr<const PackedModel> packed_model(const std::shared_ptr<const Model>& m);

class CpuBackend final : public Backend {
 public:
  /// Throws Error(kBadInput) for an unknown ISA name or one this CPU lacks.
  CpuBackend(std::shared_ptr<const Model> model, const CpuOptions& opt);

  std::string name() const override { return "cpu"; }
  const Model& model() const override { return *model_; }
  BackendDescription describe() const override { return {name(), isa_name(isa()), threads(), poison_}; }
  /// Every cache type: a typed row is written by kv_encode and read as float32 (K16).
  std::vector<KvType> kv_types() const override { return {KvType::kF32, KvType::kF16, KvType::kQ8_0}; }
  void forward_rows(KVCache& cache, std::span<const Token> tokens, RowList rows, std::span<float> logits) override;
  /// All items' tokens go through each matmul together (rows of one matrix); attention reads
  /// each item's own cache. Bits per item equal forward() alone (K8, I1).
  void forward_batch(std::span<const BatchItem> items) override;
  void set_scratch_poison(std::optional<float> value) override { poison_ = value; }
  /// Called on the calling thread after each op step of forward_batch, in order (K14's
  /// localiser, localise.hpp). Empty: no call.
  void set_op_observer(std::function<void(const OpStep&)> f) { observer_ = std::move(f); }

  Isa isa() const { return k_->isa; }
  int threads() const { return pool_.size(); }
  const Kernels& kernels() const { return *k_; }
  ThreadPool& pool() { return pool_; }

 private:
  std::shared_ptr<const Model> model_;
  std::shared_ptr<const PackedModel> packed_;
  const Kernels* k_;
  ThreadPool pool_;
  std::optional<float> poison_;
  std::function<void(const OpStep&)> observer_;
  // Scratch, one row per token of the call (R rows), grown and never shrunk:
  Scratch x_;       // (R, hidden) the residual stream
  Scratch xb_;      // (R, hidden) RMSNorm's output, then each block's output before the add
  Scratch qkv_;     // (R, q_dim + 2 kv_dim) q | k | v of one row side by side (the fused wqkv panel)
  Scratch att_;     // (R, q_dim) the attention heads' outputs
  Scratch h_;       // (R, 2 ffn) w1 x | w3 x side by side (the fused w13 panel); SwiGLU writes the first half
  Scratch logits_;  // (rows asked for, vocab) the classifier's rows, in item order
  std::vector<int> row_item_, row_pos_;
  std::vector<int> out_rows_;  // call rows whose logits were asked for (BatchItem::rows)
  /// Attention items' token blocks (first row, rows): consecutive tokens of one session (K4).
  std::vector<std::pair<int, int>> blocks_;
  /// The split decode attention's scratch (split_decode.hpp SplitScratch).
  Scratch split_s_, split_mb_, split_mr_, split_lb_, split_acc_;
  std::vector<AttnArgs> split_items_;  // (n_kv_heads,) the token's items
  static constexpr int kAttnRows = 16;  // 16 tokens x 3 heads fill three 16-lane sets (K4 lane path)
};

/// make_backend("cpu", ...) of runtime/backends.cpp.
std::unique_ptr<Backend> make_cpu_backend(std::shared_ptr<const Model> model, const CpuOptions& opt = {});

}  // namespace akv::cpu
