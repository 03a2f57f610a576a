// The "cuda" backend: the forward pass of emu/emu_backend.cpp, kernel for kernel, on a device.
// Host code only; the kernels are in kernels.cu, gemm.cu and attention.cu. A decode-sized
// chunk (every item at most kStagedRows rows) runs as one CUDA graph per shape, captured from
// the same launches with the positions read on the device; several sessions' decode steps
// (forward_batch) share one chunk.
#include "optimized/cuda/device/cuda_backend.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <map>
#include <set>
#include <string>

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
};

// One cache mirror (G8): the device copy of rows [0, n) of the host cache `of`, trusted while
// its write counter is `written`. k, v: per layer (max_ctx, kv_dim).
struct Mirror {
  const KVCache* of = nullptr;
  size_t n = 0;
  uint64_t written = 0;
  uint64_t used = 0;  // the call that last used it (least recently used is reassigned first)
  std::vector<Buffer<float>> k, v;
};

// Chunks of up to this many rows per item download through the pinned staging area and may
// run as a captured graph (speed only).
constexpr int kStagedRows = 64;
// Caches mirrored at once: the most sessions one fused decode chunk serves.
constexpr int kMaxMirrors = 8;
// The attention partials grow by whole multiples of this many splits (1024 keys), so a long
// decode re-captures its graph once per 1024 tokens, not once per split.
constexpr int kSplitsStep = 16;
// Graphs kept; past this the cache of graphs is cleared (shapes are few in practice).
constexpr size_t kMaxGraphs = 64;

// One item's part of a chunk: its cache, mirror, tokens and the wanted rows (relative).
struct Part {
  KVCache* cache = nullptr;
  int slot = 0;
  std::span<const Token> tokens;
  std::vector<int> want;
  float* logits = nullptr;  // (want.size(), vocab) on the host
  int pos0 = 0;
};

class CudaBackend final : public Backend {
 public:
  CudaBackend(std::shared_ptr<const Model> m, int device) : model_(std::move(m)), poison_(default_scratch_poison()) {
    check(cudaSetDevice(device), "cudaSetDevice");
    device_ = device;
    cudaDeviceProp prop{};
    check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
    sm_ = "sm_" + std::to_string(prop.major) + std::to_string(prop.minor) + " (" + prop.name + ")";
    check(cudaStreamCreate(&stream_), "cudaStreamCreate");  // blocking: ordered with the legacy stream's copies
    const Config& c = model_->config;
    const Weights<float>& w = model_->weights;
    for (const LayerWeights<float>& l : w.layers) {
      DevLayer d{Buffer<float>(l.attn_norm), Buffer<float>(l.wq), Buffer<float>(l.wk), Buffer<float>(l.wv),
                 Buffer<float>(l.wo), Buffer<float>(l.ffn_norm), Buffer<float>(l.w1), Buffer<float>(l.w2),
                 Buffer<float>(l.w3)};
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
    const int R = cuda::kMaxRows;
    x_ = Buffer<float>(r * c.hidden), xb_ = Buffer<float>(r * c.hidden);
    xb2_ = Buffer<float>(r * c.q_dim()), q_ = Buffer<float>(r * c.q_dim());
    k_ = Buffer<float>(r * c.kv_dim()), v_ = Buffer<float>(r * c.kv_dim());
    hb_ = Buffer<float>(r * c.ffn), hb2_ = Buffer<float>(r * c.ffn);
    logits_ = Buffer<float>(r * c.vocab);
    tokens_ = Buffer<int>(r);
    pos_ = Buffer<int>(kMaxMirrors);
    // The split-K partials (G2) of the largest product of a chunk; one workspace, reused in
    // stream order by every GEMM.
    const size_t work = std::max({cuda::dev::gemm_work_floats(R, c.hidden, c.q_dim()) +
                                      2 * cuda::dev::gemm_work_floats(R, c.hidden, c.kv_dim()),
                                  cuda::dev::gemm_work_floats(R, c.q_dim(), c.hidden),
                                  2 * cuda::dev::gemm_work_floats(R, c.hidden, c.ffn),
                                  cuda::dev::gemm_work_floats(R, c.ffn, c.hidden),
                                  cuda::dev::gemm_work_floats(R, c.hidden, c.vocab), size_t{1}});
    work_ = Buffer<float>(work);
  }

  ~CudaBackend() override {
    drop_graphs();
    if (stream_) cudaStreamDestroy(stream_);
  }

  std::string name() const override { return "cuda"; }
  const Model& model() const override { return *model_; }
  BackendDescription describe() const override { return {name(), sm_, 1, poison_}; }
  void set_scratch_poison(std::optional<float> value) override { poison_ = value; }

  void forward_rows(KVCache& cache, std::span<const Token> tokens, RowList rows, std::span<float> logits) override {
    check_item(cache, tokens.size());
    check(cudaSetDevice(device_), "cudaSetDevice");
    const int slot = mirror_for(cache, {});
    sync_mirror(slot, cache);
    ensure_partials(cuda::n_splits(static_cast<int>(cache.size() + tokens.size())));
    const size_t vocab = static_cast<size_t>(model_->config.vocab);
    size_t j = 0;  // logits rows written so far
    for (size_t at = 0; at < tokens.size(); at += cuda::kMaxRows) {
      const size_t m = std::min<size_t>(cuda::kMaxRows, tokens.size() - at);
      Part p;
      p.cache = &cache, p.slot = slot, p.tokens = tokens.subspan(at, m), p.logits = logits.data() + j * vocab;
      for (size_t r = 0; r < m; ++r)
        if (rows.empty() || (j + p.want.size() < rows.size() && rows[j + p.want.size()] == at + r))
          p.want.push_back(static_cast<int>(r));
      j += p.want.size();
      std::vector<Part> parts{std::move(p)};
      chunk(parts);
    }
  }

  // Several sessions' appends. Decode-sized items (each at most kStagedRows rows, up to
  // kMaxMirrors of them, kMaxRows rows in all) run as one chunk: their rows share every
  // GEMM, RMSNorm and elementwise launch; RoPE, the cache write and attention run per item on
  // its own mirror and position. Each item's bits are its alone bits (G2-G7: no output
  // depends on another row). Anything else runs item by item.
  void forward_batch(std::span<const BatchItem> items) override {
    size_t rows = 0;
    bool fused = items.size() > 1 && items.size() <= static_cast<size_t>(kMaxMirrors);
    for (const BatchItem& it : items) {
      check_item(*it.cache, it.tokens.size());  // every item, before any device work
      rows += it.tokens.size();
      fused = fused && !it.tokens.empty() && it.tokens.size() <= static_cast<size_t>(kStagedRows);
    }
    if (!fused || rows > static_cast<size_t>(cuda::kMaxRows)) {
      for (const BatchItem& it : items) forward_rows(*it.cache, it.tokens, it.rows, it.logits);
      return;
    }
    check(cudaSetDevice(device_), "cudaSetDevice");
    std::vector<Part> parts;
    std::set<int> taken;
    int splits = 0;
    for (const BatchItem& it : items) {
      Part p;
      p.cache = it.cache, p.tokens = it.tokens, p.logits = it.logits.data();
      p.slot = mirror_for(*it.cache, taken);
      taken.insert(p.slot);
      for (size_t j = 0; j < logit_row_count(it); ++j) p.want.push_back(static_cast<int>(logit_row(it, j)));
      splits = std::max(splits, cuda::n_splits(static_cast<int>(it.cache->size() + it.tokens.size())));
      parts.push_back(std::move(p));
    }
    for (const Part& p : parts) sync_mirror(p.slot, *p.cache);
    ensure_partials(splits);
    chunk(parts);
  }

 private:
  // Refusals before any device work: past max_ctx, or a cache with L3 masks.
  void check_item(const KVCache& cache, size_t m) const {
    const Config& cfg = model_->config;
    if (cache.size() + m > static_cast<size_t>(cfg.max_ctx))
      throw Error(ErrorCode::kContextOverflow, "cuda forward: " + std::to_string(cache.size()) + " cached + " +
                                                   std::to_string(m) + " new > max_ctx " + std::to_string(cfg.max_ctx));
    if (cache.mask() != nullptr)  // L3 masks live on the host only; refuse rather than ignore them
      throw Error(ErrorCode::kBackendUnavailable,
                  "cuda: attention masks (policy mask, spec/leakage.md L3) are not implemented on the device; "
                  "use --backend cuda-emu or cpu");
  }

  // The mirror slot of `cache`: its own if it has one, else a free or the least recently used
  // slot outside `taken` (allocated on first use: n_layers x max_ctx x kv_dim floats, K and V).
  int mirror_for(const KVCache& cache, const std::set<int>& taken) {
    ++calls_;
    for (size_t i = 0; i < mirrors_.size(); ++i)
      if (mirrors_[i].of == &cache) {
        mirrors_[i].used = calls_;
        return static_cast<int>(i);
      }
    int pick = -1;
    if (mirrors_.size() < static_cast<size_t>(kMaxMirrors)) {
      const Config& c = model_->config;
      Mirror mr;
      for (int l = 0; l < c.n_layers; ++l) {
        mr.k.emplace_back(static_cast<size_t>(c.max_ctx) * c.kv_dim());
        mr.v.emplace_back(static_cast<size_t>(c.max_ctx) * c.kv_dim());
      }
      mirrors_.push_back(std::move(mr));
      pick = static_cast<int>(mirrors_.size()) - 1;
    } else {
      for (size_t i = 0; i < mirrors_.size(); ++i)
        if (!taken.count(static_cast<int>(i)) && (pick < 0 || mirrors_[i].used < mirrors_[pick].used)) pick = static_cast<int>(i);
      if (pick < 0) throw Error(ErrorCode::kBackendUnavailable, "cuda: more caches in one batch than mirror slots");
    }
    Mirror& mr = mirrors_[pick];
    mr.of = &cache, mr.n = 0, mr.written = 0, mr.used = calls_;
    return pick;
  }

  // G8: device rows [0, n) of a slot equal the host rows of its cache as this backend last left
  // them. They are trusted for the same cache object whose write counter has not moved (only
  // truncation happened since: the Session's eviction); anything else re-uploads.
  void sync_mirror(int slot, const KVCache& cache) {
    Mirror& mr = mirrors_[slot];
    size_t valid = 0;
    if (&cache == mr.of && cache.entries_written() == mr.written) valid = std::min(mr.n, cache.size());
    const size_t kvd = static_cast<size_t>(model_->config.kv_dim()), rows = cache.size() - valid;
    if (rows)
      for (int l = 0; l < cache.n_layers(); ++l) {
        check(cudaMemcpy(mr.k[l].get() + valid * kvd, cache.k(l) + valid * kvd, rows * kvd * sizeof(float),
                         cudaMemcpyHostToDevice), "upload K");
        check(cudaMemcpy(mr.v[l].get() + valid * kvd, cache.v(l) + valid * kvd, rows * kvd * sizeof(float),
                         cudaMemcpyHostToDevice), "upload V");
      }
    mr.of = &cache;
    mr.n = cache.size();
    mr.written = cache.entries_written();
  }

  // The attention partials for kMaxRows rows of up to `splits` splits each, grown in steps of
  // kSplitsStep splits (new pointers: the captured graphs are dropped).
  void ensure_partials(int splits) {
    if (splits <= max_splits_) return;
    splits = (splits + kSplitsStep - 1) / kSplitsStep * kSplitsStep;
    const Config& c = model_->config;
    const size_t slots = static_cast<size_t>(cuda::kMaxRows) * c.n_heads * splits;
    pm_ = Buffer<float>(slots), pl_ = Buffer<float>(slots), po_ = Buffer<float>(slots * c.head_dim);
    max_splits_ = splits;
    invalidate_graphs();
  }

  void poison(float value) {
    for (Buffer<float>* b : {&x_, &xb_, &xb2_, &q_, &k_, &v_, &hb_, &hb2_, &logits_, &pm_, &pl_, &po_, &work_})
      cuda::dev::fill(b->get(), b->size(), value, stream_);
  }

  // A buffer the graphs bake in moved: none of them may run again.
  void invalidate_graphs() {
    ++generation_;
    drop_graphs();
  }

  void drop_graphs() {
    for (auto& [key, exec] : graphs_) cudaGraphExecDestroy(exec);
    graphs_.clear();
    seen_.clear();
  }

  // The shape of a decode chunk, as the key of its graph: every device pointer and size the
  // launches bake in. Positions are not in it (they are read from pos_ on the device).
  std::vector<long> graph_key(const std::vector<Part>& parts, const float* stage) const {
    std::vector<long> key{static_cast<long>(generation_), static_cast<long>(max_splits_),
                          static_cast<long>(reinterpret_cast<uintptr_t>(stage)), static_cast<long>(parts.size())};
    for (const Part& p : parts) {
      key.push_back(p.slot);
      key.push_back(static_cast<long>(p.tokens.size()));
      key.push_back(static_cast<long>(p.want.size()));
      key.insert(key.end(), p.want.begin(), p.want.end());
    }
    return key;
  }

  // One chunk of one or more parts (rows concatenated in part order).
  void chunk(std::vector<Part>& parts) {
    const Config& c = model_->config;
    const int kvd = c.kv_dim();
    int M = 0, n_out = 0;
    bool staged = true;  // every part decode-sized: downloads through staging, graph replay
    for (Part& p : parts) {
      p.pos0 = static_cast<int>(p.cache->size());
      M += static_cast<int>(p.tokens.size());
      n_out += static_cast<int>(p.want.size());
      staged = staged && p.tokens.size() <= static_cast<size_t>(kStagedRows);
    }
    {  // the tokens, concatenated
      std::vector<int> toks;
      for (const Part& p : parts) toks.insert(toks.end(), p.tokens.begin(), p.tokens.end());
      static_assert(sizeof(Token) == sizeof(int));
      check(cudaMemcpy(tokens_.get(), toks.data(), M * sizeof(int), cudaMemcpyHostToDevice), "upload tokens");
    }
    if (poison_) poison(*poison_);
    if (!staged) {  // a long chunk of one item: launched as is, downloaded straight into the cache
      enqueue(parts, M, n_out, nullptr, nullptr);
      download_direct(parts[0], M, n_out);
    } else {
      // Staging: per part, per layer its K then V rows; then every part's logits.
      size_t floats = static_cast<size_t>(n_out) * c.vocab;
      for (const Part& p : parts) floats += 2 * p.tokens.size() * kvd * c.n_layers;
      float* const before = staging_.at_least(0);
      float* stage = staging_.at_least(floats);
      if (stage != before) invalidate_graphs();  // the graphs copy into the old area
      int* pos = pos_host_.at_least(kMaxMirrors);
      for (size_t i = 0; i < parts.size(); ++i) pos[i] = parts[i].pos0;
      check(cudaMemcpyAsync(pos_.get(), pos, parts.size() * sizeof(int), cudaMemcpyHostToDevice, stream_), "upload positions");
      run_graph(parts, M, n_out, stage);
      check(cudaStreamSynchronize(stream_), "forward");  // kernel errors surface before any cache grows
      for (size_t i = 0; i < parts.size(); ++i) {
        const Part& p = parts[i];
        const size_t rows = p.tokens.size() * kvd, row0 = static_cast<size_t>(p.pos0) * kvd;
        p.cache->grow(p.tokens.size());
        for (int l = 0; l < c.n_layers; ++l) {
          const size_t at = stage_offset(parts, i, l);
          std::memcpy(p.cache->k(l) + row0, stage + at, rows * sizeof(float));
          std::memcpy(p.cache->v(l) + row0, stage + at + rows, rows * sizeof(float));
        }
      }
      size_t at = stage_offset(parts, 0, c.n_layers);  // the logits, after every layer's rows
      for (const Part& p : parts) {
        const size_t nlog = p.want.size() * static_cast<size_t>(c.vocab);
        std::memcpy(p.logits, stage + at, nlog * sizeof(float)), at += nlog;
      }
    }
    for (const Part& p : parts) {  // the slot's rows [0, pos0 + m) now match the host
      Mirror& mr = mirrors_[p.slot];
      mr.n = p.cache->size();
      mr.written = p.cache->entries_written();
    }
  }

  // A decode chunk: launched directly the first time its shape is seen (the GEMM launcher
  // times its variants then, which a capture cannot hold), captured into a graph the second
  // time and replayed from then on. The graph is the capture of the same enqueue(), so its
  // kernels and their arithmetic are the direct launches'.
  void run_graph(const std::vector<Part>& parts, int M, int n_out, float* stage) {
    const std::vector<long> key = graph_key(parts, stage);
    if (const auto it = graphs_.find(key); it != graphs_.end()) {
      check(cudaGraphLaunch(it->second, stream_), "cudaGraphLaunch");
      return;
    }
    if (!seen_.count(key)) {
      enqueue(parts, M, n_out, pos_.get(), stage);
      seen_.insert(key);
      return;
    }
    if (graphs_.size() >= kMaxGraphs) drop_graphs();
    cudaGraph_t graph = nullptr;
    check(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeRelaxed), "cudaStreamBeginCapture");
    try {
      enqueue(parts, M, n_out, pos_.get(), stage);
    } catch (...) {
      cudaStreamEndCapture(stream_, &graph);
      if (graph) cudaGraphDestroy(graph);
      throw;
    }
    check(cudaStreamEndCapture(stream_, &graph), "cudaStreamEndCapture");
    cudaGraphExec_t exec = nullptr;
    const cudaError_t e = cudaGraphInstantiate(&exec, graph, 0);
    cudaGraphDestroy(graph);
    check(e, "cudaGraphInstantiate");
    graphs_.emplace(key, exec);
    check(cudaGraphLaunch(exec, stream_), "cudaGraphLaunch");
  }

  // Every launch of one chunk on stream_. pos_dev: nullptr (positions are the parts' pos0,
  // one part only) or pos_ (part i's position at pos_dev[i], read by the kernels). stage:
  // nullptr, or the pinned area each layer's new K/V rows and the logits are copied to.
  void enqueue(const std::vector<Part>& parts, int M, int n_out, const int* pos_dev, float* stage) {
    namespace dv = cuda::dev;
    const Config& c = model_->config;
    const int d = c.hidden, qd = c.q_dim(), kvd = c.kv_dim();
    const cudaStream_t s = stream_;
    float* const work = work_.get();
    const size_t wf = work_.size();
    dv::embed(x_.get(), tokens_.get(), tok_emb_.get(), M, d, s);
    size_t st = 0;  // floats of the staging area written so far
    for (int l = 0; l < c.n_layers; ++l) {
      DevLayer& w = layers_[l];
      dv::rmsnorm_rows(xb_.get(), x_.get(), w.attn_norm.get(), M, d, c.rms_eps, s);
      dv::GemmBatch qkv;  // one launch, the same bits as three (G2)
      qkv.count = 3;
      qkv.W[0] = w.wq.get(), qkv.out[0] = q_.get(), qkv.d[0] = qd;
      qkv.W[1] = w.wk.get(), qkv.out[1] = k_.get(), qkv.d[1] = kvd;
      qkv.W[2] = w.wv.get(), qkv.out[2] = v_.get(), qkv.d[2] = kvd;
      qkv.work = work, qkv.work_floats = wf;
      dv::gemm_batch(qkv, xb_.get(), M, d, s);
      int r0 = 0;  // the part's first row in the chunk
      for (size_t i = 0; i < parts.size(); ++i) {
        const Part& p = parts[i];
        const int m = static_cast<int>(p.tokens.size());
        const int* pd = pos_dev != nullptr ? pos_dev + i : nullptr;
        Mirror& mr = mirrors_[p.slot];
        float* q = q_.get() + static_cast<size_t>(r0) * qd;
        float* k = k_.get() + static_cast<size_t>(r0) * kvd;
        float* v = v_.get() + static_cast<size_t>(r0) * kvd;
        dv::rope_rows(q, m, c.n_heads, c.head_dim, p.pos0, cos_.get(), sin_.get(), s, pd);
        dv::rope_rows(k, m, c.n_kv_heads, c.head_dim, p.pos0, cos_.get(), sin_.get(), s, pd);
        dv::write_rows(mr.k[l].get(), k, m, kvd, p.pos0, s, pd);
        dv::write_rows(mr.v[l].get(), v, m, kvd, p.pos0, s, pd);
        dv::attention_rows(xb2_.get() + static_cast<size_t>(r0) * qd, q, mr.k[l].get(), mr.v[l].get(), m, p.pos0,
                           c.n_heads, c.n_kv_heads, c.head_dim, max_splits_, pm_.get(), pl_.get(), po_.get(), s, pd);
        r0 += m;
      }
      if (stage != nullptr) {  // this layer's new rows, as written to the mirrors
        r0 = 0;
        for (const Part& p : parts) {
          const size_t rows = p.tokens.size() * kvd;
          const size_t at = stage_offset(parts, &p - parts.data(), l);
          check(cudaMemcpyAsync(stage + at, k_.get() + static_cast<size_t>(r0) * kvd, rows * sizeof(float),
                                cudaMemcpyDeviceToHost, s), "download K");
          check(cudaMemcpyAsync(stage + at + rows, v_.get() + static_cast<size_t>(r0) * kvd, rows * sizeof(float),
                                cudaMemcpyDeviceToHost, s), "download V");
          r0 += static_cast<int>(p.tokens.size());
          st += 2 * rows;
        }
      }
      dv::gemm(xb_.get(), xb2_.get(), w.wo.get(), M, qd, d, work, wf, s);
      dv::add(x_.get(), xb_.get(), static_cast<size_t>(M) * d, s);
      dv::rmsnorm_rows(xb_.get(), x_.get(), w.ffn_norm.get(), M, d, c.rms_eps, s);
      dv::GemmBatch gate_up;
      gate_up.count = 2;
      gate_up.W[0] = w.w1.get(), gate_up.out[0] = hb_.get(), gate_up.d[0] = c.ffn;
      gate_up.W[1] = w.w3.get(), gate_up.out[1] = hb2_.get(), gate_up.d[1] = c.ffn;
      gate_up.work = work, gate_up.work_floats = wf;
      dv::gemm_batch(gate_up, xb_.get(), M, d, s);
      dv::swiglu(hb_.get(), hb2_.get(), static_cast<size_t>(M) * c.ffn, s);
      dv::gemm(xb_.get(), hb_.get(), w.w2.get(), M, c.ffn, d, work, wf, s);
      dv::add(x_.get(), xb_.get(), static_cast<size_t>(M) * d, s);
    }
    // Final RMSNorm on the wanted rows, packed densely in part order (one launch when they
    // are all the rows), then the classifier on those alone: a row's bits never depend on its
    // neighbours (G2).
    if (n_out == M) {
      dv::rmsnorm_rows(xb_.get(), x_.get(), final_norm_.get(), M, d, c.rms_eps, s);
    } else {
      int j = 0, r0 = 0;
      for (const Part& p : parts) {
        for (int r : p.want)
          dv::rmsnorm_rows(xb_.get() + static_cast<size_t>(j++) * d, x_.get() + static_cast<size_t>(r0 + r) * d,
                           final_norm_.get(), 1, d, c.rms_eps, s);
        r0 += static_cast<int>(p.tokens.size());
      }
    }
    if (n_out > 0) dv::gemm(logits_.get(), xb_.get(), wcls_.get(), n_out, d, c.vocab, work, wf, s);
    if (stage != nullptr && n_out > 0)
      check(cudaMemcpyAsync(stage + st, logits_.get(), static_cast<size_t>(n_out) * c.vocab * sizeof(float),
                            cudaMemcpyDeviceToHost, s), "download logits");
  }

  // Where part i's K rows of layer l start in the staging area (its V rows follow them):
  // layer by layer, part by part within a layer.
  size_t stage_offset(const std::vector<Part>& parts, size_t i, int l) const {
    const size_t kvd = static_cast<size_t>(model_->config.kv_dim());
    size_t per_layer = 0, before = 0;
    for (size_t j = 0; j < parts.size(); ++j) {
      if (j < i) before += 2 * parts[j].tokens.size() * kvd;
      per_layer += 2 * parts[j].tokens.size() * kvd;
    }
    return static_cast<size_t>(l) * per_layer + before;
  }

  // A long chunk's downloads: straight from the mirror into the host cache (a host-side
  // staging copy of megabytes was measured slower: docs/cuda.md).
  void download_direct(const Part& p, int M, int n_out) {
    const Config& c = model_->config;
    const size_t kvd = static_cast<size_t>(c.kv_dim());
    const size_t rows = static_cast<size_t>(M) * kvd, nlog = static_cast<size_t>(n_out) * c.vocab;
    const size_t row0 = static_cast<size_t>(p.pos0) * kvd;
    check(cudaStreamSynchronize(stream_), "forward");  // kernel errors surface before the cache grows
    p.cache->grow(M);
    try {
      for (int l = 0; l < c.n_layers; ++l) {
        check(cudaMemcpy(p.cache->k(l) + row0, mirrors_[p.slot].k[l].get() + row0, rows * sizeof(float),
                         cudaMemcpyDeviceToHost), "download K");
        check(cudaMemcpy(p.cache->v(l) + row0, mirrors_[p.slot].v[l].get() + row0, rows * sizeof(float),
                         cudaMemcpyDeviceToHost), "download V");
      }
      check(cudaMemcpy(p.logits, logits_.get(), nlog * sizeof(float), cudaMemcpyDeviceToHost), "download logits");
    } catch (...) {
      p.cache->truncate(static_cast<size_t>(p.pos0));  // this chunk's rows never half-written
      throw;
    }
  }

  std::shared_ptr<const Model> model_;
  std::optional<float> poison_;
  int device_ = 0;
  std::string sm_;  // "sm_90 (NVIDIA H200)": the device, for describe()
  cudaStream_t stream_ = nullptr;
  std::vector<DevLayer> layers_;
  Buffer<float> tok_emb_, final_norm_, wcls_, cos_, sin_;
  // Device scratch, kMaxRows rows each (a chunk's rows), as the reference's RunState:
  Buffer<float> x_, xb_;     // (kMaxRows, hidden) the residual stream; RMSNorm's and each block's output
  Buffer<float> xb2_, q_;    // (kMaxRows, q_dim) the attention heads' outputs; the rotated query
  Buffer<float> k_, v_;      // (kMaxRows, kv_dim) the rotated key and the value, before the cache mirror
  Buffer<float> hb_, hb2_;   // (kMaxRows, ffn) w1 x (then SwiGLU's output) and w3 x
  Buffer<float> logits_;     // (kMaxRows, vocab)
  Buffer<float> pm_, pl_;    // (kMaxRows * n_heads * splits) slots: each split's max score and sum of weights (G5)
  Buffer<float> po_;         // (slots, head_dim) each split's unnormalised output
  Buffer<float> work_;       // the GEMMs' split-K partials (G2)
  Buffer<int> tokens_;
  Buffer<int> pos_;          // (kMaxMirrors,) each part's first position, for the captured graphs
  cuda::dev::PinnedFloats staging_;  // the downloads of one decode chunk
  cuda::dev::Pinned<int> pos_host_;
  int max_splits_ = 0;
  std::vector<Mirror> mirrors_;
  uint64_t calls_ = 0;
  uint64_t generation_ = 0;  // bumped when a buffer a graph bakes in is reallocated
  std::map<std::vector<long>, cudaGraphExec_t> graphs_;
  std::set<std::vector<long>> seen_;
};

}  // namespace

std::unique_ptr<Backend> make_cuda_backend(std::shared_ptr<const Model> model, int device) {
  require_llama_block(model->config, "cuda");
  return std::make_unique<CudaBackend>(dense_model(model), device);  // float32 weights (K15)
}

}  // namespace akv
