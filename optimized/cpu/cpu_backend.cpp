#include "optimized/cpu/cpu_backend.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <mutex>

#include "optimized/cpu/split_decode.hpp"
#include "reference/error.hpp"
#include "reference/ops.hpp"
#include "reference/strict.hpp"

namespace akv::cpu {

std::shared_ptr<const PackedModel> packed_model(const std::shared_ptr<const Model>& m) {
  static std::mutex mu;
  static std::map<const Model*, std::weak_ptr<const PackedModel>> cache;
  std::lock_guard<std::mutex> g(mu);
  auto& slot = cache[m.get()];
  if (auto p = slot.lock()) return p;
  auto p = std::make_shared<PackedModel>();
  const Config& c = m->config;
  const StoredWeights* st = m->stored.get();
  // Quantized panels from the file's blocks when every part has a format they take (K15); else
  // float32 panels, from m->weights or, for a stored-only model, from matrices dequantized for
  // the packing and dropped after it. All from one arena, in the order a token reads them.
  PanelArena arena;
  auto pack = [&](std::vector<const StoredMatrix*> s, std::vector<const std::vector<float>*> f, int n) {
    if (st != nullptr) {
      bool quant = true;
      for (const StoredMatrix* x : s) quant = quant && packs_quantized(x->type) && x->type == s[0]->type;
      if (quant) return pack_stored(s, n, &arena);
      if (!has_dense_weights(*m)) {
        std::vector<std::vector<float>> dense;
        for (const StoredMatrix* x : s) dense.push_back(st->dense(*x));
        std::vector<const std::vector<float>*> ptrs;
        for (const auto& v : dense) ptrs.push_back(&v);
        return pack_rows(ptrs, n, &arena);
      }
    }
    return pack_rows(f, n, &arena);
  };
  for (size_t l = 0; l < m->weights.layers.size(); ++l) {
    const auto& L = m->weights.layers[l];
    const StoredLayer* S = st != nullptr ? &st->layers[l] : nullptr;
    auto sp = [&](auto... x) { return S != nullptr ? std::vector<const StoredMatrix*>{&(S->*x)...} : std::vector<const StoredMatrix*>{}; };
    p->layers.push_back({pack(sp(&StoredLayer::wq, &StoredLayer::wk, &StoredLayer::wv), {&L.wq, &L.wk, &L.wv}, c.hidden),
                         pack(sp(&StoredLayer::wo), {&L.wo}, c.q_dim()),
                         pack(sp(&StoredLayer::w1, &StoredLayer::w3), {&L.w1, &L.w3}, c.hidden),
                         pack(sp(&StoredLayer::w2), {&L.w2}, c.ffn)});
  }
  p->wcls = pack(st != nullptr ? std::vector<const StoredMatrix*>{&st->classifier()} : std::vector<const StoredMatrix*>{},
                 {&classifier(m->weights)}, c.hidden);
  // The panels are a copy: the file's pages read for them can go (the embedding rows are read
  // from the file again as tokens need them).
  if (st != nullptr) st->release_pages();
  // Keep the model alive with its packing: the key is its address.
  std::shared_ptr<const PackedModel> out(p.get(), [p, m](const PackedModel*) {});
  slot = out;
  return out;
}

namespace {
// 0: $AKV_THREADS, strictly parsed (spec/input.md IN4), else 2.
int default_threads(int requested) {
  if (requested < 0 || requested > kMaxThreads)
    throw Error(ErrorCode::kBadInput, "threads: " + std::to_string(requested) + " outside [0, " +
                                          std::to_string(kMaxThreads) + "] (0: $AKV_THREADS, else 2)");
  if (requested > 0) return requested;
  if (const auto env = env_decimal("AKV_THREADS", 1, kMaxThreads)) return static_cast<int>(*env);
  return 2;
}
}  // namespace

CpuBackend::CpuBackend(std::shared_ptr<const Model> model, const CpuOptions& opt)
    : model_(std::move(model)),
      packed_(packed_model(model_)),
      k_(opt.kernels != nullptr ? opt.kernels : &kernels_for(resolve_isa(opt.isa))),
      pool_(default_threads(opt.threads)),
      poison_(default_scratch_poison()) {}

void CpuBackend::forward_rows(KVCache& cache, std::span<const Token> tokens, RowList rows, std::span<float> logits) {
  const BatchItem item{&cache, tokens, logits, rows};
  forward_batch(std::span<const BatchItem>(&item, 1));
}

void CpuBackend::forward_batch(std::span<const BatchItem> items) {
  const Config& c = model_->config;
  const int d = c.hidden, qd = c.q_dim(), kvd = c.kv_dim(), hd = c.head_dim, ffn = c.ffn, vocab = c.vocab;
  const int qkvd = qd + 2 * kvd, group = c.n_heads / c.n_kv_heads;
  int rows = 0;
  for (const BatchItem& it : items) rows += static_cast<int>(it.tokens.size());
  if (rows == 0) return;

  // Rows of the call: item by item, token by token; each row knows its cache and position.
  row_item_.resize(rows);
  row_pos_.resize(rows);
  {
    int r = 0;
    for (size_t i = 0; i < items.size(); ++i) {
      const int first = static_cast<int>(items[i].cache->grow(items[i].tokens.size()));
      for (size_t t = 0; t < items[i].tokens.size(); ++t, ++r) {
        row_item_[r] = static_cast<int>(i);
        row_pos_[r] = first + static_cast<int>(t);
      }
    }
  }
  // Attention token blocks: runs of up to kAttnRows consecutive rows of one item.
  blocks_.clear();
  for (int r = 0; r < rows;) {
    int n = 1;
    while (n < kAttnRows && r + n < rows && row_item_[r + n] == row_item_[r]) ++n;
    blocks_.push_back({r, n});
    r += n;
  }
  const size_t R = static_cast<size_t>(rows);
  auto size = [&](Scratch& b, size_t n) {
    if (b.size() < n) b.resize(n);
    if (poison_) std::fill(b.begin(), b.end(), *poison_);
  };
  size(x_, R * d);
  size(xb_, R * d);
  size(qkv_, R * qkvd);
  size(att_, R * qd);
  size(h_, R * 2 * ffn);
  // The logits rows: call rows whose logits an item asked for, in item order.
  out_rows_.clear();
  {
    size_t r = 0;
    for (const BatchItem& it : items) {
      for (size_t j = 0; j < logit_row_count(it); ++j) out_rows_.push_back(static_cast<int>(r + logit_row(it, j)));
      r += it.tokens.size();
    }
  }
  const int n_out = static_cast<int>(out_rows_.size());
  size(logits_, out_rows_.size() * vocab);

  const Kernels& k = *k_;
  {  // the embedding rows: float32, or dequantized from the file's blocks (exact, spec/gguf.md Q6)
    const bool dense = has_dense_weights(*model_);
    const float* emb = model_->weights.tok_emb.data();
    int r = 0;
    for (const BatchItem& it : items)
      for (Token t : it.tokens) {
        float* x = x_.data() + static_cast<size_t>(r++) * d;
        if (dense) std::copy_n(emb + static_cast<size_t>(t) * d, d, x);
        else model_->stored->row(model_->stored->tok_emb, t, x);
      }
  }
  if (c.embed_scale != 0.0f)  // M18: the row times one float, as the reference
    for (size_t i = 0; i < R * d; ++i) x_[i] = x_[i] * c.embed_scale;
  auto matmul = [&](const float* X, size_t ldx, const PackedMatrix& W, float* Y, size_t ldy) {
    pool_.run(W.panels(), [&](int p0, int p1) { k.matmul(X, ldx, rows, W, p0, p1, Y, ldy); });
  };
  auto per_row = [&](auto&& fn) {
    pool_.run(rows, [&](int b, int e) {
      for (int r = b; r < e; ++r) fn(r);
    });
  };
  auto step = [&](const char* op, int layer, const Scratch& buf, int n, int width, int ld) {
    if (observer_) observer_({op, layer, buf.data(), n, width, static_cast<size_t>(ld)});
  };
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  // One decode token over two or more key blocks, with threads to share them: the split path.
  AttnArgs probe;
  probe.group = group;
  probe.head_dim = hd;
  probe.pos = rows == 1 ? row_pos_[0] : 0;
  const bool split = rows == 1 && pool_.size() > 1 && probe.pos >= kKeyBlock && items[0].cache->mask() == nullptr &&
                     split_attention_applies(probe);
  if (split) {
    const SplitSizes n = split_sizes(probe, c.n_kv_heads);
    size(split_s_, n.s);
    size(split_mb_, n.b);
    size(split_mr_, n.b);
    size(split_lb_, n.b);
    size(split_acc_, n.acc);
    split_items_.resize(c.n_kv_heads);
  }

  for (int l = 0; l < c.n_layers; ++l) {
    const LayerWeights<float>& w = model_->weights.layers[l];
    const PackedModel::Layer& P = packed_->layers[l];
    const RopeTable& rope = model_->rope_for(l);  // M19
    per_row([&](int r) {
      k.rmsnorm(xb_.data() + static_cast<size_t>(r) * d, x_.data() + static_cast<size_t>(r) * d, w.attn_norm.data(), d,
                c.rms_eps);
    });
    step("rmsnorm (attn_norm)", l, xb_, rows, d, d);
    matmul(xb_.data(), d, P.wqkv, qkv_.data(), qkvd);
    step("matmul (wq, wk, wv)", l, qkv_, rows, qkvd, qkvd);
    per_row([&](int r) {
      float* q = qkv_.data() + static_cast<size_t>(r) * qkvd;
      const int pos = row_pos_[r];
      if (c.qkv_bias) {  // M14: the fused row q | k | v takes b_q | b_k | b_v
        k.add(q, w.bq.data(), qd), k.add(q + qd, w.bk.data(), kvd), k.add(q + qd + kvd, w.bv.data(), kvd);
      }
      if (c.qk_norm) {  // M15: each head of q and k normalised in place (K3's rmsnorm, out aliases x)
        for (int h = 0; h < c.n_heads; ++h) k.rmsnorm(q + h * hd, q + h * hd, w.q_norm.data(), hd, c.rms_eps);
        for (int h = 0; h < c.n_kv_heads; ++h) k.rmsnorm(q + qd + h * hd, q + qd + h * hd, w.k_norm.data(), hd, c.rms_eps);
      }
      k.rope(q, c.n_heads, hd, rope.cos_at(pos), rope.sin_at(pos));
      k.rope(q + qd, c.n_kv_heads, hd, rope.cos_at(pos), rope.sin_at(pos));
      KVCache& cache = *items[row_item_[r]].cache;  // S5-S7: stored as the cache's type, rounded here
      const size_t rb = cache.row_bytes();
      k.kv_encode(cache.type(), q + qd, kvd, cache.k_bytes(l) + static_cast<size_t>(pos) * rb);
      k.kv_encode(cache.type(), q + qd + kvd, kvd, cache.v_bytes(l) + static_cast<size_t>(pos) * rb);
    });
    step("rope (q, k)", l, qkv_, rows, qd + kvd, qkvd);
    // (token block, KV head) items: up to kAttnRows consecutive tokens of one session share the
    // passes over the cache (K4); blocks are taken from both ends alternately so that contiguous
    // thread ranges get similar causal work. Neither the blocks nor their order change a bit (K8).
    const int n_blocks = static_cast<int>(blocks_.size());
    // KV head g's item for the n tokens from call row r, one session's (K4): the item path's;
    // with n = 1, the sliding path's (moved to its window) and, with r = 0, the split path's.
    auto item_args = [&](int r, int g, int n) {
      const KVCache& cache = *items[row_item_[r]].cache;
      AttnArgs a;
      a.q = qkv_.data() + static_cast<size_t>(r) * qkvd + static_cast<size_t>(g) * group * hd;
      a.kv = cache.type();
      if (a.kv == KvType::kF32) {
        a.k = cache.k(l) + static_cast<size_t>(g) * hd;
        a.v = cache.v(l) + static_cast<size_t>(g) * hd;
      } else {  // K16: the head's typed rows, read as float32
        const size_t head = kv_row_bytes(a.kv, hd) * static_cast<size_t>(g);
        a.kq = cache.k_bytes(l) + head;
        a.vq = cache.v_bytes(l) + head;
        a.row_bytes = cache.row_bytes();
      }
      a.out = att_.data() + static_cast<size_t>(r) * qd + static_cast<size_t>(g) * group * hd;
      a.pos = row_pos_[r];
      a.stride = kvd;
      a.head_dim = hd;
      a.group = group;
      a.scale = scale;
      a.rows = n;
      a.q_stride = static_cast<size_t>(qkvd);
      a.out_stride = static_cast<size_t>(qd);
      a.mask = cache.mask();
      return a;
    };
    if (c.sliding(l)) {
      // M19: each (token, KV head) alone over its window's keys [first, pos]: the cache rows from
      // `first` are the item's keys 0..pos-first, a function of pos and the window only, so the
      // bits do not depend on which tokens share a call (K8).
      pool_.run(rows * c.n_kv_heads, [&](int b, int e) {
        for (int i = b; i < e; ++i) {
          const int r = i / c.n_kv_heads, g = i % c.n_kv_heads, pos = row_pos_[r];
          const int first = std::max(0, pos - c.sliding_window + 1);
          AttnArgs a = item_args(r, g, 1);  // then its keys start at `first`
          if (a.kv == KvType::kF32) {
            a.k += static_cast<size_t>(first) * kvd;
            a.v += static_cast<size_t>(first) * kvd;
          } else {
            a.kq += static_cast<size_t>(first) * a.row_bytes;
            a.vq += static_cast<size_t>(first) * a.row_bytes;
          }
          a.pos = pos - first;
          if (a.mask != nullptr) a.mask += first;
          k.attention(a);
        }
      });
    } else if (split) {
      // One decode token: its n_kv_heads items would leave threads idle (3 items on 2 threads),
      // so their key blocks are spread over the threads (split_decode.hpp, K4, K8).
      for (int g = 0; g < c.n_kv_heads; ++g) split_items_[g] = item_args(0, g, 1);
      split_decode(pool_, k, split_items_,
                   {split_s_.data(), split_mb_.data(), split_mr_.data(), split_lb_.data(), split_acc_.data()});
    } else
    pool_.run(n_blocks * c.n_kv_heads, [&](int b, int e) {
      for (int i = b; i < e; ++i) {
        const int j = i / c.n_kv_heads, g = i % c.n_kv_heads;
        const auto [r, n] = blocks_[(j % 2 == 0) ? j / 2 : n_blocks - 1 - j / 2];
        k.attention(item_args(r, g, n));
      }
    });
    step("attention", l, att_, rows, qd, qd);
    matmul(att_.data(), qd, P.wo, xb_.data(), d);
    step("matmul (wo)", l, xb_, rows, d, d);
    per_row([&](int r) {
      float* x = x_.data() + static_cast<size_t>(r) * d;
      if (c.post_norms) k.rmsnorm(xb_.data() + static_cast<size_t>(r) * d, xb_.data() + static_cast<size_t>(r) * d, w.post_attn_norm.data(), d, c.rms_eps);  // M16
      k.add(x, xb_.data() + static_cast<size_t>(r) * d, d);
      k.rmsnorm(xb_.data() + static_cast<size_t>(r) * d, x, w.ffn_norm.data(), d, c.rms_eps);
    });
    step("add (attention residual)", l, x_, rows, d, d);
    step("rmsnorm (ffn_norm)", l, xb_, rows, d, d);
    matmul(xb_.data(), d, P.w13, h_.data(), 2 * ffn);
    step("matmul (w1, w3)", l, h_, rows, 2 * ffn, 2 * ffn);
    per_row([&](int r) {
      float* h = h_.data() + static_cast<size_t>(r) * 2 * ffn;
      if (c.geglu) ref::geglu(h, h, h + ffn, ffn);  // M17: the reference's scalar op, akv::exp
      else k.swiglu(h, h, h + ffn, ffn);
    });
    step("swiglu", l, h_, rows, ffn, 2 * ffn);
    matmul(h_.data(), 2 * ffn, P.w2, xb_.data(), d);
    step("matmul (w2)", l, xb_, rows, d, d);
    per_row([&](int r) {
      float* y = xb_.data() + static_cast<size_t>(r) * d;
      if (c.post_norms) k.rmsnorm(y, y, w.post_ffn_norm.data(), d, c.rms_eps);  // M16
      k.add(x_.data() + static_cast<size_t>(r) * d, y, d);
    });
    step("add (ffn residual)", l, x_, rows, d, d);
  }
  // Final RMSNorm and classifier on the wanted rows only, packed densely: a row's bits do not
  // depend on the rows beside it (K8), so skipping the others changes none.
  if (n_out == 0) return;
  pool_.run(n_out, [&](int b, int e) {
    for (int j = b; j < e; ++j)
      k.rmsnorm(xb_.data() + static_cast<size_t>(j) * d, x_.data() + static_cast<size_t>(out_rows_[j]) * d,
                model_->weights.final_norm.data(), d, c.rms_eps);
  });
  step("rmsnorm (final_norm)", -1, xb_, n_out, d, d);
  const PackedMatrix& cls = packed_->wcls;
  pool_.run(cls.panels(), [&](int p0, int p1) { k.matmul(xb_.data(), d, n_out, cls, p0, p1, logits_.data(), vocab); });
  step("matmul (classifier)", -1, logits_, n_out, vocab, vocab);
  {
    size_t j = 0;
    for (const BatchItem& it : items) {
      const size_t n = logit_row_count(it);
      std::copy_n(logits_.data() + j * vocab, n * vocab, it.logits.data());
      j += n;
    }
  }
}

std::unique_ptr<Backend> make_cpu_backend(std::shared_ptr<const Model> model, const CpuOptions& opt) {
  return std::make_unique<CpuBackend>(std::move(model), opt);
}

}  // namespace akv::cpu
