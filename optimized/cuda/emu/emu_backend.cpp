// The "cuda-emu" backend: device/cuda_backend.cu's forward, kernel by kernel, on the host.
#include "optimized/cuda/emu/emu_backend.hpp"

#include <algorithm>
#include <vector>

#include "optimized/cuda/arith/elementwise.hpp"
#include "optimized/cuda/emu/emu_ops.hpp"

namespace akv {

namespace {

using cuda::emu::attention_rows;
using cuda::emu::gemm;
using cuda::emu::rmsnorm_rows;
using cuda::emu::rope_rows;

// Scratch of one chunk of up to kMaxRows tokens, the device backend's buffers on the host.
struct Scratch {
  std::vector<float> x, xb, xb2, q, k, v, hb, hb2;  // (rows, width) each
  explicit Scratch(const Config& c) {
    const size_t r = cuda::kMaxRows;
    x.resize(r * c.hidden), xb.resize(r * c.hidden), xb2.resize(r * c.q_dim()), q.resize(r * c.q_dim());
    k.resize(r * c.kv_dim()), v.resize(r * c.kv_dim()), hb.resize(r * c.ffn), hb2.resize(r * c.ffn);
  }
  void fill(float value) {
    for (auto* b : {&x, &xb, &xb2, &q, &k, &v, &hb, &hb2}) std::fill(b->begin(), b->end(), value);
  }
};

class CudaEmuBackend final : public Backend {
 public:
  explicit CudaEmuBackend(std::shared_ptr<const Model> m)
      : model_(std::move(m)), s_(model_->config), poison_(default_scratch_poison()) {}

  std::string name() const override { return "cuda-emu"; }
  const Model& model() const override { return *model_; }
  BackendDescription describe() const override { return {name(), "scalar (the CUDA kernels' arithmetic)", 1, poison_}; }
  void set_scratch_poison(std::optional<float> value) override { poison_ = value; }

  void forward_rows(KVCache& cache, std::span<const Token> tokens, RowList rows, std::span<float> logits) override {
    if (poison_) s_.fill(*poison_);
    const size_t vocab = static_cast<size_t>(model_->config.vocab);
    size_t j = 0;  // logits rows written so far
    for (size_t at = 0; at < tokens.size(); at += cuda::kMaxRows) {
      const size_t m = std::min<size_t>(cuda::kMaxRows, tokens.size() - at);
      // This chunk's wanted rows, relative to the chunk.
      std::vector<int> want;
      for (size_t r = 0; r < m; ++r) {
        const size_t i = at + r;
        if (rows.empty() || (j + want.size() < rows.size() && rows[j + want.size()] == i)) want.push_back(static_cast<int>(r));
      }
      chunk(cache, tokens.subspan(at, m), want, logits.data() + j * vocab);
      j += want.size();
    }
  }

 private:
  // The device backend's kernel sequence for one chunk of m <= kMaxRows tokens.
  // Logits only for the chunk rows `want`, written densely to `logits` (want.size(), vocab).
  void chunk(KVCache& cache, std::span<const Token> tokens, const std::vector<int>& want, float* logits) {
    const Config& c = model_->config;
    const Weights<float>& W = model_->weights;
    const int M = static_cast<int>(tokens.size()), d = c.hidden, qd = c.q_dim(), kvd = c.kv_dim();
    const int pos0 = static_cast<int>(cache.grow(M));
    for (int r = 0; r < M; ++r)
      std::copy_n(W.tok_emb.begin() + static_cast<size_t>(tokens[r]) * d, d, s_.x.begin() + static_cast<size_t>(r) * d);
    for (int l = 0; l < c.n_layers; ++l) {
      const LayerWeights<float>& w = W.layers[l];
      rmsnorm_rows(s_.xb.data(), s_.x.data(), w.attn_norm.data(), M, d, c.rms_eps);
      gemm(s_.q.data(), s_.xb.data(), w.wq.data(), M, d, qd);
      gemm(s_.k.data(), s_.xb.data(), w.wk.data(), M, d, kvd);
      gemm(s_.v.data(), s_.xb.data(), w.wv.data(), M, d, kvd);
      rope_rows(s_.q.data(), M, c.n_heads, c.head_dim, pos0, model_->rope->cos.data(), model_->rope->sin.data());
      rope_rows(s_.k.data(), M, c.n_kv_heads, c.head_dim, pos0, model_->rope->cos.data(), model_->rope->sin.data());
      std::copy_n(s_.k.begin(), static_cast<size_t>(M) * kvd, cache.k(l) + static_cast<size_t>(pos0) * kvd);
      std::copy_n(s_.v.begin(), static_cast<size_t>(M) * kvd, cache.v(l) + static_cast<size_t>(pos0) * kvd);
      attention_rows(s_.xb2.data(), s_.q.data(), cache.k(l), cache.v(l), M, pos0, c.n_heads, c.n_kv_heads, c.head_dim,
                     cache.mask());
      gemm(s_.xb.data(), s_.xb2.data(), w.wo.data(), M, qd, d);
      add(s_.x.data(), s_.xb.data(), static_cast<size_t>(M) * d);
      rmsnorm_rows(s_.xb.data(), s_.x.data(), w.ffn_norm.data(), M, d, c.rms_eps);
      gemm(s_.hb.data(), s_.xb.data(), w.w1.data(), M, d, c.ffn);
      gemm(s_.hb2.data(), s_.xb.data(), w.w3.data(), M, d, c.ffn);
      for (size_t j = 0; j < static_cast<size_t>(M) * c.ffn; ++j) s_.hb[j] = cuda::swiglu(s_.hb[j], s_.hb2[j]);
      gemm(s_.xb.data(), s_.hb.data(), w.w2.data(), M, c.ffn, d);
      add(s_.x.data(), s_.xb.data(), static_cast<size_t>(M) * d);
    }
    if (want.empty()) return;
    const int n = static_cast<int>(want.size());
    for (int j = 0; j < n; ++j)  // one row at a time: a row's bits never depend on its neighbours
      rmsnorm_rows(s_.xb.data() + static_cast<size_t>(j) * d, s_.x.data() + static_cast<size_t>(want[j]) * d,
                   W.final_norm.data(), 1, d, c.rms_eps);
    gemm(logits, s_.xb.data(), classifier(W).data(), n, d, c.vocab);
  }

  static void add(float* x, const float* y, size_t n) {
    for (size_t j = 0; j < n; ++j) x[j] = cuda::residual(x[j], y[j]);
  }

  std::shared_ptr<const Model> model_;
  Scratch s_;
  std::optional<float> poison_;
};

}  // namespace

std::unique_ptr<Backend> make_cuda_emu_backend(std::shared_ptr<const Model> model) {
  return std::make_unique<CudaEmuBackend>(std::move(model));
}

}  // namespace akv
