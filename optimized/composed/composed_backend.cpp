#include "optimized/composed/composed_backend.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <vector>

#include "reference/error.hpp"

namespace akv {

namespace {

class ComposedBackend final : public Backend {
 public:
  ComposedBackend(std::shared_ptr<const Model> m, std::shared_ptr<const OpSet> ops, ComposedOptions opt)
      : model_(std::move(m)), ops_(std::move(ops)), t_(ops_->ops()), opt_(std::move(opt)), poison_(default_scratch_poison()) {
    apply_threads();
    if (t_.prepare_weight != nullptr) {
      const Config& c = model_->config;
      auto prep = [&](const std::vector<float>& w, int d, int n) {
        void* h = t_.prepare_weight(t_.ctx, w.data(), d, n);
        if (h == nullptr) throw Error(ErrorCode::kBadKernels, ops_->source() + ": prepare_weight returned NULL");
        prepared_[w.data()] = h;
      };
      for (const auto& L : model_->weights.layers) {
        prep(L.wq, c.q_dim(), c.hidden), prep(L.wk, c.kv_dim(), c.hidden), prep(L.wv, c.kv_dim(), c.hidden);
        prep(L.wo, c.hidden, c.q_dim()), prep(L.w1, c.ffn, c.hidden), prep(L.w3, c.ffn, c.hidden);
        prep(L.w2, c.hidden, c.ffn);
      }
      prep(classifier(model_->weights), c.vocab, c.hidden);
    }
  }
  ~ComposedBackend() override {
    for (auto& [w, h] : prepared_) t_.release_weight(t_.ctx, h);
  }

  std::string name() const override { return opt_.name; }
  const Model& model() const override { return *model_; }
  BackendDescription describe() const override {
    return {opt_.name, opt_.isa.empty() ? ops_->name() : opt_.isa, std::max(1, opt_.threads), poison_};
  }
  void set_scratch_poison(std::optional<float> value) override { poison_ = value; }
  /// Every cache type: a typed cache's rows are converted to float32 for the table's attention
  /// (spec/state.md S8), which then reads exactly what the type stores.
  std::vector<KvType> kv_types() const override { return {KvType::kF32, KvType::kF16, KvType::kQ8_0}; }

  void forward_rows(KVCache& cache, std::span<const Token> tokens, RowList rows, std::span<float> logits) override {
    apply_threads();
    const size_t vocab = static_cast<size_t>(model_->config.vocab);
    const size_t step = opt_.max_rows > 0 ? static_cast<size_t>(opt_.max_rows) : tokens.size();
    size_t j = 0;  // logits rows written so far
    for (size_t at = 0; at < tokens.size(); at += step) {
      const size_t m = std::min(step, tokens.size() - at);
      std::vector<int> want;  // this chunk's wanted rows, relative to the chunk
      for (size_t r = 0; r < m; ++r)
        if (rows.empty() || (j + want.size() < rows.size() && rows[j + want.size()] == at + r)) want.push_back(static_cast<int>(r));
      chunk(cache, tokens.subspan(at, m), want, logits.data() + j * vocab);
      j += want.size();
    }
  }

  std::optional<size_t> edit_for_evict(KVCache& cache, size_t begin, size_t end) override {
    // The ABI's evict op edits float32 rows: a typed cache takes the exact path (truncate, recompute).
    if (!(ops_->own() & AKV_OP_EVICT) || cache.type() != KvType::kF32) return std::nullopt;
    apply_threads();
    const Config& c = model_->config;
    const size_t kvd = static_cast<size_t>(c.kv_dim()), size = cache.size(), len = end - begin;
    std::vector<float*> k(c.n_layers), v(c.n_layers);
    std::vector<float> prefix;  // the prefix rows before the edit, to check E3 after it
    prefix.reserve(2 * c.n_layers * begin * kvd);
    for (int l = 0; l < c.n_layers; ++l) {
      k[l] = cache.k(l), v[l] = cache.v(l);
      prefix.insert(prefix.end(), k[l], k[l] + begin * kvd);
      prefix.insert(prefix.end(), v[l], v[l] + begin * kvd);
    }
    const akv_cache_view view{c.n_layers, static_cast<int32_t>(size), c.n_kv_heads, c.head_dim, k.data(), v.data(),
                              model_->rope->cos_rows(static_cast<int>(size)), model_->rope->sin_rows(static_cast<int>(size))};
    const int32_t r = t_.evict(t_.ctx, &view, static_cast<int32_t>(begin), static_cast<int32_t>(end));
    const std::string who = ops_->source() + ": evict([" + std::to_string(begin) + ", " + std::to_string(end) + "))";
    if (r < static_cast<int32_t>(begin) || static_cast<size_t>(r) > size - len)
      throw Error(ErrorCode::kBadKernels, who + " returned " + std::to_string(r) + ", outside [" + std::to_string(begin) +
                                              ", " + std::to_string(size - len) + "] (E3: the prefix is never recomputed)");
    size_t at = 0;
    for (int l = 0; l < c.n_layers; ++l)
      for (const float* rows : {k[l], v[l]}) {
        // begin == 0: no prefix, and prefix.data() may be NULL (memcmp's arguments must not be)
        if (begin > 0 && std::memcmp(rows, prefix.data() + at, begin * kvd * sizeof(float)) != 0)
          throw Error(ErrorCode::kBadKernels, who + " rewrote prefix rows of layer " + std::to_string(l) +
                                                  " (E3: entries before the span are never touched)");
        at += begin * kvd;
      }
    cache.remove_edited(begin, end, static_cast<size_t>(r));
    return static_cast<size_t>(r);
  }

 private:
  // The table is shared by every backend made over it (one plugin, one ctx): each call sets
  // this backend's thread count first, so backends of other thread counts in one process
  // really compute at theirs (GT4 compares an evicted run at 1 thread with a never-shown at 3).
  void apply_threads() const {
    if (opt_.threads > 0 && ops_->has_threads() && !ops_->set_threads(opt_.threads))
      throw Error(ErrorCode::kBadKernels, ops_->source() + ": set_threads(" + std::to_string(opt_.threads) + ") refused");
  }
  // One chunk of M rows: M11 with every op called on all rows at once; logits for the chunk
  // rows `want`, densely (want.size(), vocab).
  void chunk(KVCache& cache, std::span<const Token> tokens, const std::vector<int>& want, float* logits) {
    const Config& c = model_->config;
    const Weights<float>& W = model_->weights;
    const int M = static_cast<int>(tokens.size()), d = c.hidden, qd = c.q_dim(), kvd = c.kv_dim(), hd = c.head_dim;
    const int ffn = c.ffn, pos0 = static_cast<int>(cache.grow(M));
    const size_t R = static_cast<size_t>(M);
    auto size = [&](std::vector<float>& b, size_t n) {
      b.resize(n);
      if (poison_) std::fill(b.begin(), b.end(), *poison_);
    };
    size(x_, R * d), size(xb_, R * d), size(q_, R * qd), size(k_, R * kvd), size(v_, R * kvd), size(att_, R * qd);
    size(h1_, R * ffn), size(h3_, R * ffn);
    size(xf_, want.size() * d);
    size_t mm = 1;  // the largest need of this chunk's matmul shapes (n, d)
    for (const auto& [n, dd] : {std::pair{d, qd}, std::pair{d, kvd}, std::pair{qd, d}, std::pair{d, ffn}, std::pair{ffn, d},
                                std::pair{d, c.vocab}})
      mm = std::max(mm, ops_->scratch_floats(AKV_OP_MATMUL, M, n, dd));
    size(scratch_mm_, mm);
    size(scratch_att_, std::max<size_t>(ops_->scratch_floats(AKV_OP_ATTENTION, M, pos0 + M, qd), 1));
    std::vector<int32_t> pos(R);
    for (int r = 0; r < M; ++r) pos[r] = pos0 + r;
    for (int r = 0; r < M; ++r)
      std::copy_n(W.tok_emb.begin() + static_cast<size_t>(tokens[r]) * d, d, x_.begin() + static_cast<size_t>(r) * d);
    const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
    const float *cos = model_->rope->cos_rows(pos0 + M), *sin = model_->rope->sin_rows(pos0 + M);
    for (int l = 0; l < c.n_layers; ++l) {
      const LayerWeights<float>& w = W.layers[l];
      t_.rmsnorm(t_.ctx, xb_.data(), x_.data(), w.attn_norm.data(), M, d, c.rms_eps);
      matmul(q_.data(), qd, xb_.data(), d, M, w.wq, d, qd);
      matmul(k_.data(), kvd, xb_.data(), d, M, w.wk, d, kvd);
      matmul(v_.data(), kvd, xb_.data(), d, M, w.wv, d, kvd);
      t_.rope(t_.ctx, q_.data(), qd, M, c.n_heads, hd, pos.data(), cos, sin);
      t_.rope(t_.ctx, k_.data(), kvd, M, c.n_kv_heads, hd, pos.data(), cos, sin);
      for (int r = 0; r < M; ++r)  // S6, S7: a typed row is rounded here
        cache.store(l, static_cast<size_t>(pos0 + r), k_.data() + static_cast<size_t>(r) * kvd, v_.data() + static_cast<size_t>(r) * kvd);
      const size_t n_keys = static_cast<size_t>(pos0 + M);  // S8: the rows as float32, then the table's attention
      const float* keys = cache.k_rows(l, 0, n_keys, kf_);
      const float* vals = cache.v_rows(l, 0, n_keys, vf_);
      t_.attention(t_.ctx, att_.data(), qd, q_.data(), qd, keys, vals, kvd, cache.mask(), M, pos0, c.n_heads,
                   c.n_kv_heads, hd, scale, scratch_att_.data());
      matmul(xb_.data(), d, att_.data(), qd, M, w.wo, qd, d);
      t_.add(t_.ctx, x_.data(), xb_.data(), M * d);
      t_.rmsnorm(t_.ctx, xb_.data(), x_.data(), w.ffn_norm.data(), M, d, c.rms_eps);
      matmul(h1_.data(), ffn, xb_.data(), d, M, w.w1, d, ffn);
      matmul(h3_.data(), ffn, xb_.data(), d, M, w.w3, d, ffn);
      t_.swiglu(t_.ctx, h1_.data(), h1_.data(), h3_.data(), M * ffn);
      matmul(xb_.data(), d, h1_.data(), ffn, M, w.w2, ffn, d);
      t_.add(t_.ctx, x_.data(), xb_.data(), M * d);
    }
    if (want.empty()) return;
    const int n = static_cast<int>(want.size());
    for (int j = 0; j < n; ++j)  // the wanted rows, packed: a row's bits never depend on its neighbours (GT2)
      std::copy_n(x_.begin() + static_cast<size_t>(want[j]) * d, d, xf_.begin() + static_cast<size_t>(j) * d);
    t_.rmsnorm(t_.ctx, xb_.data(), xf_.data(), W.final_norm.data(), n, d, c.rms_eps);
    matmul(logits, c.vocab, xb_.data(), d, n, classifier(W), d, c.vocab);
  }

  void matmul(float* Y, size_t ldy, const float* X, size_t ldx, int M, const std::vector<float>& Wt, int n, int d) {
    const auto it = prepared_.find(Wt.data());
    t_.matmul(t_.ctx, Y, ldy, X, ldx, M, Wt.data(), it == prepared_.end() ? nullptr : it->second, n, d,
              scratch_mm_.data());
  }

  std::shared_ptr<const Model> model_;
  std::shared_ptr<const OpSet> ops_;
  const akv_kernels& t_;
  ComposedOptions opt_;
  std::optional<float> poison_;
  std::map<const float*, void*> prepared_;
  // Scratch of one chunk of M rows, resized per chunk and poisoned:
  std::vector<float> x_;            // (M, hidden) the residual stream
  std::vector<float> xb_;           // (M, hidden) RMSNorm's output, then each block's output before the add
  std::vector<float> q_, k_, v_;    // (M, q_dim), (M, kv_dim), (M, kv_dim) the projections, q and k rotated
  std::vector<float> att_;          // (M, q_dim) the attention heads' outputs
  std::vector<float> h1_, h3_;      // (M, ffn) each: w1 x (then SwiGLU's output) and w3 x
  std::vector<float> xf_;           // (rows asked for, hidden) the residual rows whose logits are asked for
  std::vector<float> scratch_mm_;   // the table's matmul scratch: max of scratch_floats over this chunk's shapes
  std::vector<float> scratch_att_;  // the table's attention scratch: scratch_floats(ATTENTION, M, pos0 + M, q_dim)
  std::vector<float> kf_, vf_;      // a typed cache's rows of one layer as float32 (S8); unused for f32
};

}  // namespace

std::unique_ptr<Backend> make_composed_backend(std::shared_ptr<const Model> model, std::shared_ptr<const OpSet> ops,
                                               const ComposedOptions& opt) {
  require_llama_block(model->config, opt.name);  // the kernel ABI's ops are the llama block's
  return std::make_unique<ComposedBackend>(dense_model(model), std::move(ops), opt);  // the ABI takes float32 (K15)
}

}  // namespace akv
