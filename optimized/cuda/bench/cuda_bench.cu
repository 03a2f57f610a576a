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

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--config") a.config = v;
    else if (k == "--prefill") a.prefill = std::atoi(v.c_str());
    else if (k == "--decode") a.decode = std::atoi(v.c_str());
    else if (k == "--reps") a.reps = std::atoi(v.c_str());
    else { std::fprintf(stderr, "unknown flag %s\n", k.c_str()); std::exit(2); }
  }
  if (a.config == "auto") {
    a.config = "small";
    for (const auto& n : config_names()) if (n == "bench") a.config = "bench";
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

struct Shape { const char* name; int n, d; };

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

  // 1. GEMM vs cuBLAS SGEMM, M = one chunk.
  const int M = std::min(args.prefill, cuda::kMaxRows);
  const Shape shapes[] = {{"q", cfg.hidden, cfg.q_dim()}, {"k/v", cfg.hidden, cfg.kv_dim()},
                          {"o", cfg.q_dim(), cfg.hidden}, {"gate/up", cfg.hidden, cfg.ffn},
                          {"down", cfg.ffn, cfg.hidden},  {"logits", cfg.hidden, cfg.vocab}};
  cublasHandle_t h;
  cublas_check(cublasCreate(&h), "create");
  cublas_check(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH), "math mode");  // FP32 SGEMM, no TF32
  std::printf("\n%-8s %6s %6s %6s %12s %12s %8s\n", "matmul", "M", "n", "d", "akv GFLOP/s", "cuBLAS", "ratio");
  double ours_ms = 0, blas_ms = 0;
  for (const Shape& s : shapes) {
    std::vector<float> hx(static_cast<size_t>(M) * s.n), hw(static_cast<size_t>(s.d) * s.n);
    for (size_t i = 0; i < hx.size(); ++i) hx[i] = float(int(i % 17) - 8) / 8.0f;
    for (size_t i = 0; i < hw.size(); ++i) hw[i] = float(int(i % 13) - 6) / 16.0f;
    Buffer<float> x(hx), w(hw), out(static_cast<size_t>(M) * s.d);
    const float one = 1.0f, zero = 0.0f;
    const double t_ours = time_ms([&] { cuda::dev::gemm(out.get(), x.get(), w.get(), M, s.n, s.d, nullptr); }, args.reps);
    // Row-major out (M, d) = X (M, n) W^T is column-major out^T (d, M) = W (as op T) X^T.
    const double t_blas = time_ms([&] {
      cublas_check(cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, s.d, M, s.n, &one, w.get(), s.n, x.get(), s.n, &zero,
                               out.get(), s.d), "sgemm");
    }, args.reps);
    const double flop = 2.0 * M * s.n * s.d;
    std::printf("%-8s %6d %6d %6d %12.1f %12.1f %7.0f%%\n", s.name, M, s.n, s.d, flop / t_ours / 1e6,
                flop / t_blas / 1e6, 100.0 * t_blas / t_ours);
    const int count = (std::string(s.name) == "k/v" || std::string(s.name) == "gate/up") ? 2 : 1;
    ours_ms += count * t_ours, blas_ms += count * t_blas;
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
  std::printf("%-44s %.0f%% (target >= 40%%)\n", "matmul: akv GEMM time / cuBLAS SGEMM time", 100.0 * blas_ms / ours_ms);
  std::printf("%-44s %.0f tokens/s\n", ("prefill, " + std::to_string(args.prefill) + " tokens, one call").c_str(),
              args.prefill / prefill_s);
  std::printf("%-44s %.0f tokens/s\n", ("decode, " + std::to_string(args.decode) + " tokens after the prefill").c_str(),
              args.decode / decode_s);
  std::printf("%-44s %.3f s (%zu tokens recomputed)\n", "evict span 2 of 8", evict_s, st.tokens_recomputed);
  std::printf("%-44s %.3f s (%zu tokens)\n", "rebuild without span 2", rebuild_s, never.size());
  std::printf("%-44s %s\n", "E1 on the device (evict == never, bitwise)", e1 ? "yes" : "NO");
  return e1 ? 0 : 1;
}
