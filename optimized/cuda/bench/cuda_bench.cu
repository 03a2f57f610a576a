// The CUDA benchmark of scripts/gpu-check (spec/kernels-cuda.md, docs/cuda.md):
//   1. our GEMM (G2) vs cuBLAS SGEMM (CUBLAS_DEFAULT_MATH: no TF32) on the model's matmul
//      shapes, M = one forward chunk; target: ours >= 40% of cuBLAS;
//   2. prefill tokens/s (one call of --prefill tokens) and decode tokens/s (--decode one-token
//      calls after it) of the "cuda" backend;
//   3. eviction of an interior span vs a full rebuild without it, through akv::Session, with
//      the E1 check (bitwise) on the result.
// Usage: akv_cuda_bench [--config auto|tiny|small|bench] [--prefill N] [--decode N] [--reps N]
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "optimized/cuda/arith/gemm.hpp"
#include "optimized/cuda/device/cuda_backend.hpp"
#include "optimized/cuda/device/dev_buffer.hpp"
#include "optimized/cuda/device/kernels.cuh"
#include "reference/session.hpp"
#include "verify/digest.hpp"

using namespace akv;
using cuda::dev::Buffer;
using cuda::dev::check;

namespace {

struct Args {
  std::string config = "auto";
  int prefill = 4096, decode = 128, reps = 20;
};

[[noreturn]] void usage_error(const std::string& msg) {
  std::fprintf(stderr, "akv_cuda_bench: %s\n", msg.c_str());
  std::exit(2);
}

// A positive integer, strictly: no sign, no trailing text, no overflow.
int positive(const std::string& flag, const std::string& v) {
  int x = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
  if (v.empty() || ec != std::errc() || end != v.data() + v.size() || x <= 0)
    usage_error(flag + " wants a positive integer, got '" + v + "'");
  return x;
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; i += 2) {
    const std::string k = argv[i];
    if (i + 1 >= argc) usage_error(k + " needs a value");
    const std::string v = argv[i + 1];
    if (k == "--config") a.config = v;
    else if (k == "--prefill") a.prefill = positive(k, v);
    else if (k == "--decode") a.decode = positive(k, v);
    else if (k == "--reps") a.reps = positive(k, v);
    else usage_error("unknown flag " + k + " (expected --config, --prefill, --decode, --reps)");
  }
  if (a.config == "auto") {
    a.config = "small";
    for (const auto& n : config_names()) if (n == "bench") a.config = "bench";
  }
  try {
    config_by_name(a.config);
  } catch (const std::exception& e) {
    usage_error(std::string("--config: ") + e.what());
  }
  return a;
}

void cublas_check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) { std::fprintf(stderr, "cuBLAS %s: status %d\n", what, int(s)); std::exit(1); }
}

// Milliseconds per call of f, averaged over reps after 3 warm-up calls.
template <class F>
double time_ms(F f, int reps) {
  for (int i = 0; i < 3; ++i) f();
  cudaEvent_t a, b;
  check(cudaEventCreate(&a), "event"), check(cudaEventCreate(&b), "event");
  check(cudaEventRecord(a), "record");
  for (int i = 0; i < reps; ++i) f();
  check(cudaEventRecord(b), "record");
  check(cudaEventSynchronize(b), "sync");
  float ms = 0;
  check(cudaEventElapsedTime(&ms, a, b), "elapsed");
  cudaEventDestroy(a), cudaEventDestroy(b);
  return ms / reps;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

struct Shape {
  const char* name;
  int n, d;
  int count = 1;         // times per layer (k and v, gate and up)
  bool smollm2 = false;  // SmolLM2-135M's shapes, reported apart from the model's
};

}  // namespace

int main(int argc, char** argv) {
  const Args args = parse(argc, argv);
  if (cuda_device_count() == 0) { std::fprintf(stderr, "akv_cuda_bench: no CUDA device\n"); return 1; }
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "properties");
  const Config cfg = config_by_name(args.config);
  auto model = make_model(cfg, 1);
  std::printf("device: %s (sm_%d%d), config %s (hidden %d, layers %d, heads %d/%d, ffn %d)\n", prop.name,
              prop.major, prop.minor, cfg.name.c_str(), cfg.hidden, cfg.n_layers, cfg.n_heads, cfg.n_kv_heads, cfg.ffn);

  // 1. GEMM vs cuBLAS SGEMM, M = one chunk: every variant (each checked bitwise against the
  //    64x64 one on the device), the launcher's pick, and cuBLAS. The model's shapes, then
  //    SmolLM2-135M's (hidden 576, 9/3 heads of 64, FFN 1536, vocab 49152) for scale.
  const int M = std::min(args.prefill, cuda::kMaxRows);
  const Shape shapes[] = {{"q", cfg.hidden, cfg.q_dim()},     {"k/v", cfg.hidden, cfg.kv_dim(), 2},
                          {"o", cfg.q_dim(), cfg.hidden},     {"gate/up", cfg.hidden, cfg.ffn, 2},
                          {"down", cfg.ffn, cfg.hidden},      {"logits", cfg.hidden, cfg.vocab},
                          {"s2:q/o", 576, 576, 2, true},      {"s2:k/v", 576, 192, 2, true},
                          {"s2:gate/up", 576, 1536, 2, true}, {"s2:down", 1536, 576, 1, true},
                          {"s2:logits", 576, 49152, 1, true}};
  cublasHandle_t h;
  cublas_check(cublasCreate(&h), "create");
  cublas_check(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH), "math mode");  // FP32 SGEMM, no TF32
  std::printf("\nGFLOP/s per GEMM, M = %d rows (akv = the launcher's pick; every variant bitwise equal: %s)\n", M,
              "checked below");
  std::printf("%-11s %6s %6s", "matmul", "n", "d");
  for (const cuda::GemmVariant& v : cuda::kGemmVariants) std::printf(" %9s", v.name);
  std::printf(" %9s %9s %9s %7s\n", "akv", "pick", "cuBLAS", "ratio");
  double ours_ms = 0, blas_ms = 0, ours_s2 = 0, blas_s2 = 0;
  bool variants_equal = true;
  for (const Shape& s : shapes) {
    std::vector<float> hx(static_cast<size_t>(M) * s.n), hw(static_cast<size_t>(s.d) * s.n);
    for (size_t i = 0; i < hx.size(); ++i) hx[i] = float(int(i % 17) - 8) / 8.0f + float(i % 5) * 1e-3f;
    for (size_t i = 0; i < hw.size(); ++i) hw[i] = float(int(i % 13) - 6) / 16.0f + float(i % 7) * 1e-3f;
    const size_t outs = static_cast<size_t>(M) * s.d;
    Buffer<float> x(hx), w(hw), out(outs);
    std::vector<float> first(outs), other(outs);
    const double flop = 2.0 * M * s.n * s.d;
    std::printf("%-11s %6d %6d", s.name, s.n, s.d);
    for (int v = cuda::kGemmVariantCount - 1; v >= 0; --v) {  // 64x64 first: the one compared against
      cuda::dev::fill(out.get(), outs, std::numeric_limits<float>::quiet_NaN(), nullptr);
      cuda::dev::gemm_variant(v, out.get(), x.get(), w.get(), M, s.n, s.d, nullptr);
      check(cudaMemcpy((v == cuda::kGemmVariantCount - 1 ? first : other).data(), out.get(), outs * sizeof(float),
                       cudaMemcpyDeviceToHost), "download");
      if (v != cuda::kGemmVariantCount - 1 && std::memcmp(first.data(), other.data(), outs * sizeof(float)) != 0) {
        variants_equal = false;
        std::fprintf(stderr, "GEMM variant %s differs from 64x64 on %s\n", cuda::kGemmVariants[v].name, s.name);
      }
    }
    for (int v = 0; v < cuda::kGemmVariantCount; ++v) {
      const double t = time_ms([&] { cuda::dev::gemm_variant(v, out.get(), x.get(), w.get(), M, s.n, s.d, nullptr); },
                               args.reps);
      std::printf(" %9.0f", flop / t / 1e6);
    }
    const double t_ours = time_ms([&] { cuda::dev::gemm(out.get(), x.get(), w.get(), M, s.n, s.d, nullptr); }, args.reps);
    // Row-major out (M, d) = X (M, n) W^T is column-major out^T (d, M) = W (as op T) X^T.
    const float one = 1.0f, zero = 0.0f;
    const double t_blas = time_ms([&] {
      cublas_check(cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, s.d, M, s.n, &one, w.get(), s.n, x.get(), s.n, &zero,
                               out.get(), s.d), "sgemm");
    }, args.reps);
    std::printf(" %9.0f %9s %9.0f %6.2fx\n", flop / t_ours / 1e6, cuda::kGemmVariants[cuda::dev::gemm_variant_for(M, s.d)].name,
                flop / t_blas / 1e6, t_blas / t_ours);
    (s.smollm2 ? ours_s2 : ours_ms) += s.count * t_ours;
    (s.smollm2 ? blas_s2 : blas_ms) += s.count * t_blas;
  }
  cublasDestroy(h);

  // 2. Prefill and decode through the backend (forward copies K/V and logits back: included).
  auto be = make_cuda_backend(model);
  be->set_scratch_poison(std::nullopt);
  std::vector<Token> toks(args.prefill + args.decode);
  for (size_t i = 0; i < toks.size(); ++i) toks[i] = Token((i * 2654435761u >> 7) % cfg.vocab);
  std::vector<float> logits(static_cast<size_t>(args.prefill) * cfg.vocab);
  { KVCache warm(cfg); be->forward(warm, std::span<const Token>(toks).first(64), std::span<float>(logits).first(64 * cfg.vocab)); }
  KVCache cache(cfg);
  auto t0 = std::chrono::steady_clock::now();
  be->forward(cache, std::span<const Token>(toks).first(args.prefill), logits);
  const double prefill_s = seconds_since(t0);
  t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < args.decode; ++i)
    be->forward(cache, std::span<const Token>(toks).subspan(args.prefill + i, 1), std::span<float>(logits).first(cfg.vocab));
  const double decode_s = seconds_since(t0);

  // 3. Eviction vs rebuild: 8 spans of prefill/8 tokens; evict span 2.
  const size_t span_len = std::max(1, args.prefill / 8);
  std::vector<std::vector<Token>> spans(8);
  for (size_t i = 0; i < 8; ++i) spans[i].assign(toks.begin() + i * span_len, toks.begin() + (i + 1) * span_len);
  Session s(*be);
  for (size_t i = 0; i < 8; ++i) s.append(i, spans[i]);
  t0 = std::chrono::steady_clock::now();
  const EvictStats st = s.evict(2);
  const double evict_s = seconds_since(t0);
  Session never(*be);
  t0 = std::chrono::steady_clock::now();
  for (size_t i = 0; i < 8; ++i) if (i != 2) never.append(i, spans[i]);
  const double rebuild_s = seconds_since(t0);
  const bool e1 = cache_sha256(s.cache()) == cache_sha256(never.cache()) &&
                  std::memcmp(s.logits().data(), never.logits().data(), cfg.vocab * sizeof(float)) == 0;

  std::printf("\n== akv CUDA benchmark: %s, config %s ==\n", prop.name, cfg.name.c_str());
  std::printf("%-44s %s\n", "what", "figure");
  std::printf("%-44s %.2fx (target >= 0.9x; per layer, time-weighted)\n", "matmul: cuBLAS SGEMM time / akv GEMM time",
              blas_ms / ours_ms);
  std::printf("%-44s %.2fx\n", "  the same on SmolLM2-135M's shapes", blas_s2 / ours_s2);
  std::printf("%-44s %s\n", "GEMM variants bitwise equal on the device", variants_equal ? "yes" : "NO");
  std::printf("%-44s %.0f tokens/s\n", ("prefill, " + std::to_string(args.prefill) + " tokens, one call").c_str(),
              args.prefill / prefill_s);
  std::printf("%-44s %.0f tokens/s\n", ("decode, " + std::to_string(args.decode) + " tokens after the prefill").c_str(),
              args.decode / decode_s);
  std::printf("%-44s %.3f s (%zu tokens recomputed)\n", "evict span 2 of 8", evict_s, st.tokens_recomputed);
  std::printf("%-44s %.3f s (%zu tokens)\n", "rebuild without span 2", rebuild_s, never.size());
  std::printf("%-44s %s\n", "E1 on the device (evict == never, bitwise)", e1 ? "yes" : "NO");
  return e1 && variants_equal ? 0 : 1;
}
