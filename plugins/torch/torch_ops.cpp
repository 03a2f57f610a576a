// PyTorch's CPU kernels (ATen, from PyPI's torch wheel: scripts/fetch-engines) as Hugging Face
// transformers' Llama code calls them in eager PyTorch, behind include/akv/kernels.h:
//   matmul     F.linear(x, W) on x (1, M, n), as nn.Linear without bias (AKV_TORCH_EAGER:
//              torch.matmul(x, W.T), the same ATen mm);
//   rmsnorm    F.rms_norm(x, (n,), w, eps) (torch's own RMSNorm op);
//   rope       apply_rotary_pos_emb: x * cos + rotate_half(x) * sin, cos and sin the table's
//              rows pos[m] repeated twice (HF's rotary embedding layout), as tensor ops;
//   swiglu     F.silu(gate) * up (LlamaMLP's act_fn(gate_proj(x)) * up_proj(x));
//   add        the residual x + y;
//   attention  F.scaled_dot_product_attention with HF's sdpa mask rules: no mask and
//              is_causal for a prefill from position 0, no mask for one query, else a boolean
//              (M, n) mask; enable_gqa without a mask, repeat_kv with one (transformers'
//              use_gqa_in_sdpa). AKV_TORCH_EAGER: HF's eager attention, softmax((q k^T) *
//              scale + mask) v with repeat_kv and a float mask of finfo.min.
// K and V are copied into HF's cache layout (1, kv_heads, n, head_dim), contiguous; q is HF's
// (1, heads, M, head_dim) view of the projection. Every call runs under c10::InferenceMode.
// Threads: at::set_num_threads (ATen's intra-op pool, OpenMP, and MKL's); without set_threads
// ATen's default (the physical cores). A third-party kernel under test, not a sound one: what the
// gate finds is docs/gate-findings.md. Errors (a C++ exception) write NaN to the outputs.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/Version.h>
#include <c10/core/InferenceMode.h>
#include <akv/kernels.h>

#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

#ifdef AKV_TORCH_EAGER
constexpr bool kEager = true;
#else
constexpr bool kEager = false;
#endif

// A (rows, cols) view of a row-major buffer with row stride ld (no copy).
at::Tensor view(const float* p, int64_t rows, int64_t cols, size_t ld) {
  return at::from_blob(const_cast<float*>(p), {rows, cols}, {static_cast<int64_t>(ld), 1}, at::kFloat);
}

// out (rows, cols), row stride ld, gets r's values (any layout), or NaN.
void store(float* out, size_t ld, int64_t rows, int64_t cols, const at::Tensor& r) {
  view(out, rows, cols, ld).copy_(r.reshape({rows, cols}));
}
void fill_nan(float* out, size_t ld, int64_t rows, int64_t cols) {
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) out[i * ld + j] = kNaN;
}

int set_threads(void*, int32_t threads) {
  if (threads < 1) return 1;
  try {
    at::set_num_threads(threads);
  } catch (...) {
    return 1;
  }
  return 0;
}

void matmul(void*, float* Y, size_t ldy, const float* X, size_t ldx, int32_t M, const float* W, const void*, int32_t n,
            int32_t d, float*) {
  try {
    c10::InferenceMode guard;
    const at::Tensor x = view(X, M, n, ldx).unsqueeze(0), w = view(W, d, n, n);
    store(Y, ldy, M, d, kEager ? at::matmul(x, w.t()) : at::linear(x, w));
  } catch (...) {
    fill_nan(Y, ldy, M, d);
  }
}

void rmsnorm(void*, float* out, const float* x, const float* w, int32_t M, int32_t n, float eps) {
  try {
    c10::InferenceMode guard;
    const at::Tensor r = at::rms_norm(view(x, M, n, n).unsqueeze(0), {n}, view(w, 1, n, n).reshape({n}), eps);
    store(out, n, M, n, r);
  } catch (...) {
    fill_nan(out, n, M, n);
  }
}

void rope(void*, float* x, size_t ldx, int32_t M, int32_t heads, int32_t hd, const int32_t* pos, const float* cos,
          const float* sin) {
  try {
    c10::InferenceMode guard;
    const int half = hd / 2;
    // HF's cos/sin (M, head_dim): the table's row pos[m], twice (cat(freqs, freqs)).
    std::vector<float> c(static_cast<size_t>(M) * hd), s(c.size());
    for (int m = 0; m < M; ++m)
      for (int i = 0; i < hd; ++i) {
        c[static_cast<size_t>(m) * hd + i] = cos[static_cast<size_t>(pos[m]) * half + i % half];
        s[static_cast<size_t>(m) * hd + i] = sin[static_cast<size_t>(pos[m]) * half + i % half];
      }
    const at::Tensor ct = at::from_blob(c.data(), {1, M, 1, hd}, at::kFloat),
                     st = at::from_blob(s.data(), {1, M, 1, hd}, at::kFloat);
    // (1, M, heads, hd) view of x; HF transposes to (1, heads, M, hd) first, the same elements.
    const at::Tensor q = at::from_blob(x, {1, M, heads, hd}, {0, static_cast<int64_t>(ldx), hd, 1}, at::kFloat);
    const at::Tensor x1 = q.narrow(-1, 0, half), x2 = q.narrow(-1, half, half);
    const at::Tensor rotated = at::cat({-x2, x1}, -1);  // rotate_half
    const at::Tensor r = q * ct + rotated * st;
    q.copy_(r);
  } catch (...) {
    fill_nan(x, ldx, M, static_cast<int64_t>(heads) * hd);
  }
}

void swiglu(void*, float* out, const float* gate, const float* up, int32_t n) {
  try {
    c10::InferenceMode guard;
    const at::Tensor r = at::silu(view(gate, 1, n, n)) * view(up, 1, n, n);
    store(out, n, 1, n, r);
  } catch (...) {
    fill_nan(out, n, 1, n);
  }
}

void add(void*, float* x, const float* y, int32_t n) {
  try {
    c10::InferenceMode guard;
    const at::Tensor r = view(x, 1, n, n) + view(y, 1, n, n);
    store(x, n, 1, n, r);
  } catch (...) {
    fill_nan(x, n, 1, n);
  }
}

// HF's repeat_kv: (1, kvh, n, hd) -> (1, kvh * group, n, hd), head h reading KV head h / group.
at::Tensor repeat_kv(const at::Tensor& t, int64_t group) {
  if (group == 1) return t;
  const auto s = t.sizes();
  return t.unsqueeze(2).expand({s[0], s[1], group, s[2], s[3]}).reshape({s[0], s[1] * group, s[2], s[3]});
}

void attention(void*, float* out, size_t ldo, const float* q, size_t ldq, const float* k, const float* v, size_t ldkv,
               const uint8_t* mask, int32_t M, int32_t pos0, int32_t heads, int32_t kvh, int32_t hd, float scale,
               float*) {
  try {
    c10::InferenceMode guard;
    const int64_t n = static_cast<int64_t>(pos0) + M, group = heads / kvh;
    const at::Tensor qt = at::from_blob(const_cast<float*>(q), {1, M, heads, hd}, {0, static_cast<int64_t>(ldq), hd, 1},
                                        at::kFloat)
                              .transpose(1, 2);
    // The cache in HF's layout: (1, kvh, n, hd), contiguous (DynamicCache's tensors).
    auto cache = [&](const float* p) {
      return at::from_blob(const_cast<float*>(p), {1, n, kvh, hd}, {0, static_cast<int64_t>(ldkv), hd, 1}, at::kFloat)
          .transpose(1, 2)
          .contiguous();
    };
    const at::Tensor kt = cache(k), vt = cache(v);
    // allowed[m][p]: key p <= pos0 + m and not masked.
    std::optional<at::Tensor> allowed;
    const bool need_mask = mask != nullptr || (M > 1 && pos0 > 0) || kEager;
    if (need_mask) {
      at::Tensor a = at::ones({M, n}, at::kBool).tril(pos0);
      if (mask != nullptr) {
        const at::Tensor keep = at::from_blob(const_cast<uint8_t*>(mask), {n}, at::kByte).eq(0);
        a = a.logical_and(keep.unsqueeze(0));
      }
      allowed = a.view({1, 1, M, n});
    }
    at::Tensor r;
    if (kEager) {
      // HF eager_attention_forward: (q k^T) * scaling + causal_mask, softmax in float32, then v.
      const at::Tensor fmask = at::zeros({1, 1, M, n}, at::kFloat).masked_fill(allowed->logical_not(),
                                                                                std::numeric_limits<float>::lowest());
      at::Tensor w = at::matmul(qt, repeat_kv(kt, group).transpose(2, 3)) * scale;
      w = w + fmask;
      w = at::softmax(w, -1, at::kFloat);
      r = at::matmul(w, repeat_kv(vt, group));
    } else if (allowed) {
      r = at::scaled_dot_product_attention(qt, repeat_kv(kt, group), repeat_kv(vt, group), allowed, 0.0,
                                           /*is_causal=*/false, static_cast<double>(scale), /*enable_gqa=*/false);
    } else {
      r = at::scaled_dot_product_attention(qt, kt, vt, std::nullopt, 0.0, /*is_causal=*/M > 1,
                                           static_cast<double>(scale), /*enable_gqa=*/group > 1);
    }
    store(out, ldo, M, static_cast<int64_t>(heads) * hd, r.transpose(1, 2));
  } catch (...) {
    fill_nan(out, ldo, M, static_cast<int64_t>(heads) * hd);
  }
}

}  // namespace

/// What the findings record beside the results (scripts/gate-catalog reads it with ctypes): the
/// torch version, MKL's and oneDNN's, ATen's CPU capability and its default threads. Not part
/// of the ABI.
extern "C" __attribute__((visibility("default"))) const char* akv_torch_info(void) {
  static const std::string info = [] {
    std::string s = std::string("torch ") + AKV_TORCH_VERSION + "; default threads " + std::to_string(at::get_num_threads()) +
                    "; ATen CPU capability " + at::get_cpu_capability() + "; " + at::get_mkl_version() + "; " +
                    at::get_mkldnn_version() + "; " + at::get_openmp_version();
    for (char& c : s)
      if (c == '\n') c = ' ';
    return s;
  }();
  return info.c_str();
}

extern "C" __attribute__((visibility("default"))) const akv_kernels* akv_get_kernels(void) {
  static const std::string name = std::string(kEager ? "torch-eager-" : "torch-sdpa-") + AKV_TORCH_VERSION;
  static const akv_kernels table = {
      .abi_version = AKV_KERNELS_ABI_VERSION,
      .name = name.c_str(),
      .provides = AKV_OP_MATMUL | AKV_OP_RMSNORM | AKV_OP_ROPE | AKV_OP_ATTENTION | AKV_OP_SWIGLU | AKV_OP_ADD,
      .ctx = nullptr,
      .set_threads = set_threads,
      .scratch_floats = nullptr,
      .prepare_weight = nullptr,
      .release_weight = nullptr,
      .matmul = matmul,
      .rmsnorm = rmsnorm,
      .rope = rope,
      .swiglu = swiglu,
      .add = add,
      .attention = attention,
      .evict = nullptr,
  };
  return &table;
}
