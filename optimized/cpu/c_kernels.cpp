#include "optimized/cpu/c_kernels.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "optimized/cpu/kernels.hpp"
#include "optimized/cpu/split_decode.hpp"
#include "reference/error.hpp"

namespace akv::cpu {

struct CpuTableOps {
  static CpuKernelTable& self(void* ctx) { return *static_cast<CpuKernelTable*>(ctx); }

  static int set_threads(void* ctx, int32_t n) {
    if (n < 1 || n > kMaxThreads) return 1;
    try {
      self(ctx).pool_ = std::make_unique<ThreadPool>(n);
    } catch (...) {
      return 1;
    }
    return 0;
  }

  static void* prepare(void*, const float* W, int32_t d, int32_t n) {
    const std::vector<float> w(W, W + static_cast<size_t>(d) * n);
    return new PackedMatrix(pack_rows({&w}, n));
  }
  static void release(void*, void* p) { delete static_cast<PackedMatrix*>(p); }

  static void matmul(void* ctx, float* Y, size_t ldy, const float* X, size_t ldx, int32_t M, const float* W,
                     const void* prepared, int32_t n, int32_t d, float*) {
    std::unique_ptr<PackedMatrix> own;
    const PackedMatrix* P = static_cast<const PackedMatrix*>(prepared);
    if (P == nullptr) own.reset(static_cast<PackedMatrix*>(prepare(ctx, W, d, n))), P = own.get();
    const Kernels& k = *self(ctx).k_;
    self(ctx).pool_->run(P->panels(), [&](int p0, int p1) { k.matmul(X, ldx, M, *P, p0, p1, Y, ldy); });
  }

  static void rmsnorm(void* ctx, float* out, const float* x, const float* w, int32_t M, int32_t n, float eps) {
    for (int32_t m = 0; m < M; ++m)
      self(ctx).k_->rmsnorm(out + static_cast<size_t>(m) * n, x + static_cast<size_t>(m) * n, w, n, eps);
  }

  static void rope(void* ctx, float* x, size_t ldx, int32_t M, int32_t heads, int32_t hd, const int32_t* pos,
                   const float* cos, const float* sin) {
    const size_t half = static_cast<size_t>(hd / 2);
    for (int32_t m = 0; m < M; ++m) self(ctx).k_->rope(x + m * ldx, heads, hd, cos + pos[m] * half, sin + pos[m] * half);
  }

  static void swiglu(void* ctx, float* out, const float* g, const float* u, int32_t n) { self(ctx).k_->swiglu(out, g, u, n); }
  static void add(void* ctx, float* x, const float* y, int32_t n) { self(ctx).k_->add(x, y, n); }

  // Items of up to 16 consecutive rows and one KV head, as the fused forward forms them (K4);
  // one decode token past the first key block, with threads to share its blocks, takes the
  // split path as the fused forward does (cpu_backend.cpp), so the gate reaches it (GT2
  // attention.decode).
  static void attention(void* ctx, float* out, size_t ldo, const float* q, size_t ldq, const float* k, const float* v,
                        size_t ldkv, const uint8_t* mask, int32_t M, int32_t pos0, int32_t heads, int32_t kvh,
                        int32_t hd, float scale, float*) {
    constexpr int kRows = 16;
    const int group = heads / kvh, blocks = (M + kRows - 1) / kRows;
    const Kernels& K = *self(ctx).k_;
    auto item = [&](int r, int g, int rows) {
      AttnArgs a;
      a.q = q + r * ldq + static_cast<size_t>(g) * group * hd;
      a.k = k + static_cast<size_t>(g) * hd;
      a.v = v + static_cast<size_t>(g) * hd;
      a.out = out + r * ldo + static_cast<size_t>(g) * group * hd;
      a.pos = pos0 + r;
      a.stride = static_cast<int>(ldkv);
      a.head_dim = hd;
      a.group = group;
      a.scale = scale;
      a.rows = rows;
      a.q_stride = ldq;
      a.out_stride = ldo;
      a.mask = mask;
      return a;
    };
    ThreadPool& pool = *self(ctx).pool_;
    if (M == 1 && pool.size() > 1 && pos0 >= kKeyBlock && mask == nullptr && split_attention_applies(item(0, 0, 1))) {
      split(pool, K, item, kvh);
      return;
    }
    pool.run(blocks * kvh, [&](int b, int e) {
      for (int i = b; i < e; ++i) {
        const int r = (i / kvh) * kRows, g = i % kvh;
        K.attention(item(r, g, std::min(kRows, M - r)));
      }
    });
  }

  // K4 "split over key blocks" for one decode token: the fused forward's driver (split_decode.hpp)
  // on scratch filled with NaN first, so every float the phases read they wrote.
  template <class Item>
  static void split(ThreadPool& pool, const Kernels& K, const Item& item, int kvh) {
    std::vector<AttnArgs> items(kvh);
    for (int g = 0; g < kvh; ++g) items[g] = item(0, g, 1);
    const SplitSizes n = split_sizes(items[0], kvh);
    const float nan = std::numeric_limits<float>::quiet_NaN();
    std::vector<float> s(n.s, nan), mb(n.b, nan), mr(n.b, nan), lb(n.b, nan), acc(n.acc, nan);
    split_decode(pool, K, items, {s.data(), mb.data(), mr.data(), lb.data(), acc.data()});
  }
};

CpuKernelTable::CpuKernelTable(Isa isa, int threads) : name_(std::string("cpu-") + isa_name(isa)) {
  if (!isa_supported(isa)) throw Error(ErrorCode::kBackendUnavailable, std::string("cpu kernels: this CPU lacks ") + isa_name(isa));
  k_ = &kernels_for(isa);
  pool_ = std::make_unique<ThreadPool>(threads);
  using O = CpuTableOps;
  t_ = akv_kernels{.abi_version = AKV_KERNELS_ABI_VERSION,
                   .name = name_.c_str(),
                   .provides = AKV_OP_ALL & ~AKV_OP_EVICT,
                   .ctx = this,
                   .set_threads = O::set_threads,
                   .scratch_floats = nullptr,
                   .prepare_weight = O::prepare,
                   .release_weight = O::release,
                   .matmul = O::matmul,
                   .rmsnorm = O::rmsnorm,
                   .rope = O::rope,
                   .swiglu = O::swiglu,
                   .add = O::add,
                   .attention = O::attention,
                   .evict = nullptr};
}

}  // namespace akv::cpu
