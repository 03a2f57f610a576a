// The "cuda" backend: the forward pass of emu/emu_backend.cpp, kernel for kernel, on a device.
// Host code only; the kernels are in kernels.cu.
#include "optimized/cuda/device/cuda_backend.hpp"

#include <algorithm>
#include <string>
#include <cstring>
#include <limits>

#include "optimized/cuda/arith/attention.hpp"
#include "optimized/cuda/arith/gemm.hpp"
#include "optimized/cuda/device/dev_buffer.hpp"
#include "optimized/cuda/device/kernels.cuh"
#include "reference/error.hpp"

namespace akv {

int cuda_device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no driver" / "no device" error
    return 0;
  }
  return n;
}

namespace {

using cuda::dev::Buffer;
using cuda::dev::check;

struct DevLayer {
  Buffer<float> attn_norm, wq, wk, wv, wo, ffn_norm, w1, w2, w3;
  Buffer<float> k, v;  // the cache mirror: (max_ctx, kv_dim) each
};

// Chunks of up to this many rows download through the pinned staging area (speed only).
constexpr int kStagedRows = 64;

class CudaBackend final : public Backend {
 public:
  CudaBackend(std::shared_ptr<const Model> m, int device) : model_(std::move(m)), poison_(default_scratch_poison()) {
    check(cudaSetDevice(device), "cudaSetDevice");
    device_ = device;
    cudaDeviceProp prop{};
    check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
    sm_ = "sm_" + std::to_string(prop.major) + std::to_string(prop.minor) + " (" + prop.name + ")";
    const Config& c = model_->config;
    const Weights<float>& w = model_->weights;
    for (const LayerWeights<float>& l : w.layers) {
      DevLayer d{Buffer<float>(l.attn_norm), Buffer<float>(l.wq), Buffer<float>(l.wk), Buffer<float>(l.wv),
                 Buffer<float>(l.wo), Buffer<float>(l.ffn_norm), Buffer<float>(l.w1), Buffer<float>(l.w2),
                 Buffer<float>(l.w3), Buffer<float>(static_cast<size_t>(c.max_ctx) * c.kv_dim()),
                 Buffer<float>(static_cast<size_t>(c.max_ctx) * c.kv_dim())};
      layers_.push_back(std::move(d));
    }
    tok_emb_ = Buffer<float>(w.tok_emb);
    final_norm_ = Buffer<float>(w.final_norm);
    wcls_ = Buffer<float>(classifier(w));
    {  // the one table (M6), bit for bit: every row the context holds, copied once
      const RopeTable& t = *model_->rope;
      const size_t n = static_cast<size_t>(t.max_pos) * static_cast<size_t>(t.head_dim / 2);
      cos_ = Buffer<float>(std::vector<float>(t.cos_rows(t.max_pos), t.cos_rows(t.max_pos) + n));
      sin_ = Buffer<float>(std::vector<float>(t.sin_rows(t.max_pos), t.sin_rows(t.max_pos) + n));
    }
    const size_t r = cuda::kMaxRows;
    x_ = Buffer<float>(r * c.hidden), xb_ = Buffer<float>(r * c.hidden);
    xb2_ = Buffer<float>(r * c.q_dim()), q_ = Buffer<float>(r * c.q_dim());
    k_ = Buffer<float>(r * c.kv_dim()), v_ = Buffer<float>(r * c.kv_dim());
    hb_ = Buffer<float>(r * c.ffn), hb2_ = Buffer<float>(r * c.ffn);
    logits_ = Buffer<float>(r * c.vocab);
    tokens_ = Buffer<int>(r);
  }

  std::string name() const override { return "cuda"; }
  const Model& model() const override { return *model_; }
  BackendDescription describe() const override { return {name(), sm_, 1, poison_}; }
  void set_scratch_poison(std::optional<float> value) override { poison_ = value; }

  void forward_rows(KVCache& cache, std::span<const Token> tokens, RowList rows, std::span<float> logits) override {
    const Config& cfg = model_->config;
    if (cache.size() + tokens.size() > static_cast<size_t>(cfg.max_ctx))  // before any device work
      throw Error(ErrorCode::kContextOverflow, "cuda forward: " + std::to_string(cache.size()) + " cached + " +
                                                   std::to_string(tokens.size()) + " new > max_ctx " +
                                                   std::to_string(cfg.max_ctx));
    if (cache.mask() != nullptr)  // L3 masks live on the host only; refuse rather than ignore them
      throw Error(ErrorCode::kBackendUnavailable,
                  "cuda: attention masks (policy mask, spec/leakage.md L3) are not implemented on the device; "
                  "use --backend cuda-emu or cpu");
    check(cudaSetDevice(device_), "cudaSetDevice");
    sync_mirror(cache);
    ensure_partials(cuda::n_splits(static_cast<int>(cache.size() + tokens.size())));
    if (poison_) poison(*poison_);
    const size_t vocab = static_cast<size_t>(model_->config.vocab);
    size_t j = 0;  // logits rows written so far
    for (size_t at = 0; at < tokens.size(); at += cuda::kMaxRows) {
      const size_t m = std::min<size_t>(cuda::kMaxRows, tokens.size() - at);
      std::vector<int> want;  // this chunk's wanted rows, relative to the chunk
      for (size_t r = 0; r < m; ++r)
        if (rows.empty() || (j + want.size() < rows.size() && rows[j + want.size()] == at + r)) want.push_back(static_cast<int>(r));
      chunk(cache, tokens.subspan(at, m), want, logits.data() + j * vocab);
      j += want.size();
    }
    mirror_of_ = &cache;
    mirror_n_ = cache.size();
    mirror_written_ = cache.entries_written();
  }

 private:
  // G8: device rows [0, mirror_n_) equal the host rows of *mirror_of_ as this backend last left
  // them. They are trusted for the same cache object whose write counter has not moved (only
  // truncation happened since: the Session's eviction); anything else re-uploads.
  void sync_mirror(const KVCache& cache) {
    size_t valid = 0;
    if (&cache == mirror_of_ && cache.entries_written() == mirror_written_) valid = std::min(mirror_n_, cache.size());
    const size_t kvd = static_cast<size_t>(model_->config.kv_dim()), rows = cache.size() - valid;
    if (rows)
      for (int l = 0; l < cache.n_layers(); ++l) {
        check(cudaMemcpy(layers_[l].k.get() + valid * kvd, cache.k(l) + valid * kvd, rows * kvd * sizeof(float),
                         cudaMemcpyHostToDevice), "upload K");
        check(cudaMemcpy(layers_[l].v.get() + valid * kvd, cache.v(l) + valid * kvd, rows * kvd * sizeof(float),
                         cudaMemcpyHostToDevice), "upload V");
      }
    mirror_of_ = &cache;
    mirror_n_ = cache.size();
    mirror_written_ = cache.entries_written();
  }

  // The attention partials for kMaxRows rows of up to `splits` splits each.
  void ensure_partials(int splits) {
    if (splits <= max_splits_) return;
    const Config& c = model_->config;
    const size_t slots = static_cast<size_t>(cuda::kMaxRows) * c.n_heads * splits;
    pm_ = Buffer<float>(slots), pl_ = Buffer<float>(slots), po_ = Buffer<float>(slots * c.head_dim);
    max_splits_ = splits;
  }

  void poison(float value) {
    for (Buffer<float>* b : {&x_, &xb_, &xb2_, &q_, &k_, &v_, &hb_, &hb2_, &logits_, &pm_, &pl_, &po_})
      cuda::dev::fill(b->get(), b->size(), value, nullptr);
  }

  // Logits only for the chunk rows `want`, written densely to `logits` (want.size(), vocab).
  void chunk(KVCache& cache, std::span<const Token> tokens, const std::vector<int>& want, float* logits) {
    namespace dv = cuda::dev;
    const Config& c = model_->config;
    const int M = static_cast<int>(tokens.size()), d = c.hidden, qd = c.q_dim(), kvd = c.kv_dim();
    const int pos0 = static_cast<int>(cache.size());
    static_assert(sizeof(Token) == sizeof(int));
    check(cudaMemcpy(tokens_.get(), tokens.data(), M * sizeof(int), cudaMemcpyHostToDevice), "upload tokens");
    const cudaStream_t s = nullptr;
    dv::embed(x_.get(), tokens_.get(), tok_emb_.get(), M, d, s);
    for (int l = 0; l < c.n_layers; ++l) {
      DevLayer& w = layers_[l];
      dv::rmsnorm_rows(xb_.get(), x_.get(), w.attn_norm.get(), M, d, c.rms_eps, s);
      dv::GemmBatch qkv;  // one launch, the same bits as three (G2)
      qkv.count = 3;
      qkv.W[0] = w.wq.get(), qkv.out[0] = q_.get(), qkv.d[0] = qd;
      qkv.W[1] = w.wk.get(), qkv.out[1] = k_.get(), qkv.d[1] = kvd;
      qkv.W[2] = w.wv.get(), qkv.out[2] = v_.get(), qkv.d[2] = kvd;
      dv::gemm_batch(qkv, xb_.get(), M, d, s);
      dv::rope_rows(q_.get(), M, c.n_heads, c.head_dim, pos0, cos_.get(), sin_.get(), s);
      dv::rope_rows(k_.get(), M, c.n_kv_heads, c.head_dim, pos0, cos_.get(), sin_.get(), s);
      const size_t row0 = static_cast<size_t>(pos0) * kvd, bytes = static_cast<size_t>(M) * kvd * sizeof(float);
      check(cudaMemcpyAsync(w.k.get() + row0, k_.get(), bytes, cudaMemcpyDeviceToDevice, s), "write K");
      check(cudaMemcpyAsync(w.v.get() + row0, v_.get(), bytes, cudaMemcpyDeviceToDevice, s), "write V");
      dv::attention_rows(xb2_.get(), q_.get(), w.k.get(), w.v.get(), M, pos0, c.n_heads, c.n_kv_heads, c.head_dim,
                         max_splits_, pm_.get(), pl_.get(), po_.get(), s);
      dv::gemm(xb_.get(), xb2_.get(), w.wo.get(), M, qd, d, s);
      dv::add(x_.get(), xb_.get(), static_cast<size_t>(M) * d, s);
      dv::rmsnorm_rows(xb_.get(), x_.get(), w.ffn_norm.get(), M, d, c.rms_eps, s);
      dv::GemmBatch gate_up;
      gate_up.count = 2;
      gate_up.W[0] = w.w1.get(), gate_up.out[0] = hb_.get(), gate_up.d[0] = c.ffn;
      gate_up.W[1] = w.w3.get(), gate_up.out[1] = hb2_.get(), gate_up.d[1] = c.ffn;
      dv::gemm_batch(gate_up, xb_.get(), M, d, s);
      dv::swiglu(hb_.get(), hb2_.get(), static_cast<size_t>(M) * c.ffn, s);
      dv::gemm(xb_.get(), hb_.get(), w.w2.get(), M, c.ffn, d, s);
      dv::add(x_.get(), xb_.get(), static_cast<size_t>(M) * d, s);
    }
    // Final RMSNorm on the wanted rows, packed densely (one launch when they are all the rows),
    // then the classifier on those alone: a row's bits never depend on its neighbours (G2).
    const int n_out = static_cast<int>(want.size());
    if (n_out == M) {
      dv::rmsnorm_rows(xb_.get(), x_.get(), final_norm_.get(), M, d, c.rms_eps, s);
    } else {
      for (int j = 0; j < n_out; ++j)
        dv::rmsnorm_rows(xb_.get() + static_cast<size_t>(j) * d, x_.get() + static_cast<size_t>(want[j]) * d,
                         final_norm_.get(), 1, d, c.rms_eps, s);
    }
    if (n_out > 0) dv::gemm(logits_.get(), xb_.get(), wcls_.get(), n_out, d, c.vocab, s);
    // The host cache is the source of truth: copy the new rows and the logits back. A small
    // chunk (decode) goes through one pinned staging area, so its copies queue behind the
    // kernels and the host waits once; a large one is copied straight into the cache, which
    // spares a host-side copy of megabytes (both measured: docs/cuda.md).
    const size_t rows = static_cast<size_t>(M) * kvd, nlog = static_cast<size_t>(n_out) * c.vocab;
    const size_t row0 = static_cast<size_t>(pos0) * kvd;
    if (M <= kStagedRows) {
      float* stage = staging_.at_least(2 * rows * c.n_layers + nlog);
      for (int l = 0; l < c.n_layers; ++l) {
        check(cudaMemcpyAsync(stage + (2 * l) * rows, layers_[l].k.get() + row0, rows * sizeof(float),
                              cudaMemcpyDeviceToHost, s), "download K");
        check(cudaMemcpyAsync(stage + (2 * l + 1) * rows, layers_[l].v.get() + row0, rows * sizeof(float),
                              cudaMemcpyDeviceToHost, s), "download V");
      }
      check(cudaMemcpyAsync(stage + 2 * rows * c.n_layers, logits_.get(), nlog * sizeof(float),
                            cudaMemcpyDeviceToHost, s), "download logits");
      check(cudaStreamSynchronize(s), "forward");
      cache.grow(M);
      for (int l = 0; l < c.n_layers; ++l) {
        std::memcpy(cache.k(l) + row0, stage + (2 * l) * rows, rows * sizeof(float));
        std::memcpy(cache.v(l) + row0, stage + (2 * l + 1) * rows, rows * sizeof(float));
      }
      std::memcpy(logits, stage + 2 * rows * c.n_layers, nlog * sizeof(float));
    } else {
      check(cudaStreamSynchronize(s), "forward");  // kernel errors surface before the cache grows
      cache.grow(M);
      try {
        for (int l = 0; l < c.n_layers; ++l) {
          check(cudaMemcpy(cache.k(l) + row0, layers_[l].k.get() + row0, rows * sizeof(float),
                           cudaMemcpyDeviceToHost), "download K");
          check(cudaMemcpy(cache.v(l) + row0, layers_[l].v.get() + row0, rows * sizeof(float),
                           cudaMemcpyDeviceToHost), "download V");
        }
        check(cudaMemcpy(logits, logits_.get(), nlog * sizeof(float), cudaMemcpyDeviceToHost), "download logits");
      } catch (...) {
        cache.truncate(static_cast<size_t>(pos0));  // this chunk's rows never half-written
        throw;
      }
    }
    mirror_n_ = cache.size();  // rows [0, pos0 + M) now match the host
    mirror_written_ = cache.entries_written();
  }

  std::shared_ptr<const Model> model_;
  std::optional<float> poison_;
  int device_ = 0;
  std::string sm_;  // "sm_90 (NVIDIA H200)": the device, for describe()
  std::vector<DevLayer> layers_;
  Buffer<float> tok_emb_, final_norm_, wcls_, cos_, sin_;
  // Device scratch, kMaxRows rows each (a chunk's rows), as the reference's RunState:
  Buffer<float> x_, xb_;     // (kMaxRows, hidden) the residual stream; RMSNorm's and each block's output
  Buffer<float> xb2_, q_;    // (kMaxRows, q_dim) the attention heads' outputs; the rotated query
  Buffer<float> k_, v_;      // (kMaxRows, kv_dim) the rotated key and the value, before the cache mirror
  Buffer<float> hb_, hb2_;   // (kMaxRows, ffn) w1 x (then SwiGLU's output) and w3 x
  Buffer<float> logits_;     // (kMaxRows, vocab)
  Buffer<float> pm_, pl_;    // (kMaxRows * n_heads * splits) slots: each split's max score and sum of weights (G3)
  Buffer<float> po_;         // (slots, head_dim) each split's unnormalised output
  Buffer<int> tokens_;
  cuda::dev::PinnedFloats staging_;  // the downloads of one chunk
  int max_splits_ = 0;
  const KVCache* mirror_of_ = nullptr;
  size_t mirror_n_ = 0;
  uint64_t mirror_written_ = 0;
};

}  // namespace

std::unique_ptr<Backend> make_cuda_backend(std::shared_ptr<const Model> model, int device) {
  require_llama_block(model->config, "cuda");
  return std::make_unique<CudaBackend>(std::move(model), device);
}

}  // namespace akv
