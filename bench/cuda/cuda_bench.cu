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
#include <algorithm>
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
#include "runtime/digest.hpp"

using namespace akv;
using cuda::dev::Buffer;
using cuda::dev::check;
using cuda::dev::GemmBatch;

namespace {
GemmBatch gemm_one(float* out, const float* W, int d, float* work, size_t work_floats) {
  GemmBatch b;
  b.count = 1, b.W[0] = W, b.out[0] = out, b.d[0] = d, b.work = work, b.work_floats = work_floats;
  return b;
}
}  // namespace

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

// Milliseconds per call of f: the median of 5 event-timed batches of reps calls each, after
// 3 warm-up calls.
template <class F>
double time_ms(F f, int reps) {
  for (int i = 0; i < 3; ++i) f();
  cudaEvent_t a, b;
  check(cudaEventCreate(&a), "event"), check(cudaEventCreate(&b), "event");
  std::vector<double> ms;
  for (int batch = 0; batch < 5; ++batch) {
    check(cudaEventRecord(a), "record");
    for (int i = 0; i < reps; ++i) f();
    check(cudaEventRecord(b), "record");
    check(cudaEventSynchronize(b), "sync");
    float t = 0;
    check(cudaEventElapsedTime(&t, a, b), "elapsed");
    ms.push_back(t / reps);
  }
  cudaEvent_t none[] = {a, b};
  for (cudaEvent_t e : none) cudaEventDestroy(e);
  std::nth_element(ms.begin(), ms.begin() + 2, ms.end());
  return ms[2];
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
  //    last one on the device), the launcher's pick, and cuBLAS. The model's shapes, then
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
  // The clocks ramp up under load: 300 ms of cuBLAS first, so no contender meets an idle card.
  {
    const Shape& big = shapes[sizeof(shapes) / sizeof(shapes[0]) - 1];
    Buffer<float> x(static_cast<size_t>(M) * big.n), w(static_cast<size_t>(big.d) * big.n), out(static_cast<size_t>(M) * big.d);
    cuda::dev::fill(x.get(), x.size(), 0.5f, nullptr), cuda::dev::fill(w.get(), w.size(), 0.25f, nullptr);
    const float one = 1.0f, zero = 0.0f;
    const auto t0 = std::chrono::steady_clock::now();
    while (seconds_since(t0) < 0.3) {
      cublas_check(cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, big.d, M, big.n, &one, w.get(), big.n, x.get(), big.n, &zero,
                               out.get(), big.d), "sgemm");
      check(cudaDeviceSynchronize(), "warm-up");
    }
  }
  std::printf("\nGEMM, M = %d rows: GFLOP/s of akv (the launcher's pick) and cuBLAS SGEMM, medians, same run\n", M);
  std::printf("%-11s %6s %6s %9s %15s %9s %7s\n", "matmul", "n", "d", "akv", "pick", "cuBLAS", "ratio");
  double ours_ms = 0, blas_ms = 0, ours_s2 = 0, blas_s2 = 0, ours_o_down = 0, blas_o_down = 0;
  bool variants_equal = true;
  std::vector<std::vector<double>> variant_gf(cuda::kGemmVariantCount);
  for (const Shape& s : shapes) {
    std::vector<float> hx(static_cast<size_t>(M) * s.n), hw(static_cast<size_t>(s.d) * s.n);
    for (size_t i = 0; i < hx.size(); ++i) hx[i] = float(int(i % 17) - 8) / 8.0f + float(i % 5) * 1e-3f;
    for (size_t i = 0; i < hw.size(); ++i) hw[i] = float(int(i % 13) - 6) / 16.0f + float(i % 7) * 1e-3f;
    const size_t outs = static_cast<size_t>(M) * s.d;
    Buffer<float> x(hx), w(hw), out(outs), work(cuda::dev::gemm_work_floats(M, s.n, s.d));  // split-K partials (G2)
    std::vector<float> first(outs), other(outs);
    const double flop = 2.0 * M * s.n * s.d;
    for (int v = cuda::kGemmVariantCount - 1; v >= 0; --v) {  // the last first: the one compared against
      cuda::dev::fill(out.get(), outs, std::numeric_limits<float>::quiet_NaN(), nullptr);
      cuda::dev::gemm_variant(v, out.get(), x.get(), w.get(), M, s.n, s.d, work.get(), work.size(), nullptr);
      check(cudaMemcpy((v == cuda::kGemmVariantCount - 1 ? first : other).data(), out.get(), outs * sizeof(float),
                       cudaMemcpyDeviceToHost), "download");
      if (v != cuda::kGemmVariantCount - 1 && std::memcmp(first.data(), other.data(), outs * sizeof(float)) != 0) {
        variants_equal = false;
        std::fprintf(stderr, "GEMM variant %s differs from the last one on %s\n", cuda::kGemmVariants[v].name, s.name);
      }
    }
    for (int v = 0; v < cuda::kGemmVariantCount; ++v)
      variant_gf[v].push_back(
          flop / time_ms([&] { cuda::dev::gemm_variant(v, out.get(), x.get(), w.get(), M, s.n, s.d, work.get(), work.size(), nullptr); }, args.reps) /
          1e6);
    const int pick = cuda::dev::gemm_variant_for(gemm_one(out.get(), w.get(), s.d, work.get(), work.size()), x.get(), M, s.n, nullptr);
    // Row-major out (M, d) = X (M, n) W^T is column-major out^T (d, M) = W (as op T) X^T.
    const float one = 1.0f, zero = 0.0f;
    const auto ours = [&] { cuda::dev::gemm(out.get(), x.get(), w.get(), M, s.n, s.d, work.get(), work.size(), nullptr); };
    const auto blas = [&] {
      cublas_check(cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, s.d, M, s.n, &one, w.get(), s.n, x.get(), s.n, &zero,
                               out.get(), s.d), "sgemm");
    };
    double t_ours = time_ms(ours, args.reps), t_blas = time_ms(blas, args.reps);  // then again, interleaved
    t_ours = std::min(t_ours, time_ms(ours, args.reps)), t_blas = std::min(t_blas, time_ms(blas, args.reps));
    std::printf("%-11s %6d %6d %9.0f %15s %9.0f %6.2fx\n", s.name, s.n, s.d, flop / t_ours / 1e6,
                cuda::kGemmVariants[pick].name, flop / t_blas / 1e6, t_blas / t_ours);
    if (std::string(s.name) == "o" || std::string(s.name) == "down") ours_o_down += t_ours, blas_o_down += t_blas;
    (s.smollm2 ? ours_s2 : ours_ms) += s.count * t_ours;
    (s.smollm2 ? blas_s2 : blas_ms) += s.count * t_blas;
  }
  // The backend's batched launches (one launch for q, k, v; one for gate, up: the same bits,
  // G2) against cuBLAS on the concatenated weights, one SGEMM each.
  double ours_layer = 0, blas_layer = 0;  // per layer as the backend runs it
  {
    struct Fused { const char* name; int n; std::vector<int> ds; };
    const Fused fused[] = {{"qkv", cfg.hidden, {cfg.q_dim(), cfg.kv_dim(), cfg.kv_dim()}},
                           {"gate+up", cfg.hidden, {cfg.ffn, cfg.ffn}}};
    std::printf("\nbatched launches, as the backend runs them (cuBLAS: one SGEMM on the concatenated weights)\n");
    for (const Fused& f : fused) {
      int dsum = 0;
      for (int d : f.ds) dsum += d;
      std::vector<float> hx(static_cast<size_t>(M) * f.n), hw(static_cast<size_t>(dsum) * f.n);
      for (size_t i = 0; i < hx.size(); ++i) hx[i] = float(int(i % 17) - 8) / 8.0f;
      for (size_t i = 0; i < hw.size(); ++i) hw[i] = float(int(i % 13) - 6) / 16.0f;
      Buffer<float> x(hx), w(hw), out(static_cast<size_t>(M) * dsum);
      cuda::dev::GemmBatch b;
      size_t woff = 0, ooff = 0;
      for (int d : f.ds) {
        b.W[b.count] = w.get() + woff, b.out[b.count] = out.get() + ooff, b.d[b.count] = d, ++b.count;
        woff += static_cast<size_t>(d) * f.n, ooff += static_cast<size_t>(M) * d;
      }
      Buffer<float> work(cuda::dev::gemm_work_floats(b, M, f.n));
      b.work = work.get(), b.work_floats = work.size();
      const float one = 1.0f, zero = 0.0f;
      const auto ours = [&] { cuda::dev::gemm_batch(b, x.get(), M, f.n, nullptr); };
      const auto blas = [&] {
        cublas_check(cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, dsum, M, f.n, &one, w.get(), f.n, x.get(), f.n, &zero,
                                 out.get(), dsum), "sgemm");
      };
      double t_ours = time_ms(ours, args.reps), t_blas = time_ms(blas, args.reps);
      t_ours = std::min(t_ours, time_ms(ours, args.reps)), t_blas = std::min(t_blas, time_ms(blas, args.reps));
      const double flop = 2.0 * M * f.n * dsum;
      std::printf("%-11s %6d %6d %9.0f %15s %9.0f %6.2fx\n", f.name, f.n, dsum, flop / t_ours / 1e6,
                  cuda::kGemmVariants[cuda::dev::gemm_variant_for(b, x.get(), M, f.n, nullptr)].name, flop / t_blas / 1e6,
                  t_blas / t_ours);
      ours_layer += t_ours, blas_layer += t_blas;
    }
  }
  // The unbatched rows of a layer: o and down (the logits run once per call, not per layer).
  ours_layer += ours_o_down, blas_layer += blas_o_down;

  std::printf("\nGFLOP/s of every GEMM variant (block tile / thread tile / k-tile), same shapes in order\n");
  for (int v = 0; v < cuda::kGemmVariantCount; ++v) {
    std::printf("%-15s", cuda::kGemmVariants[v].name);
    for (double gf : variant_gf[v]) std::printf(" %6.0f", gf);
    std::printf("\n");
  }
  cublasDestroy(h);

  // 2. Prefill and decode through the backend (forward copies K/V and logits back: included);
  //    3. eviction vs rebuild.
  auto be = make_cuda_backend(model);
  be->set_scratch_poison(std::nullopt);
  std::vector<Token> toks(args.prefill + args.decode);
  for (size_t i = 0; i < toks.size(); ++i) toks[i] = Token((i * 2654435761u >> 7) % cfg.vocab);
  std::vector<float> logits(static_cast<size_t>(args.prefill) * cfg.vocab);
  const size_t span_len = std::max(1, args.prefill / 8);
  std::vector<std::vector<Token>> spans(8);
  for (size_t i = 0; i < 8; ++i) spans[i].assign(toks.begin() + i * span_len, toks.begin() + (i + 1) * span_len);
  struct Figures {
    double prefill_s, decode_s, evict_s, rebuild_s;
    size_t recomputed, never_size;
    bool e1;
  };
  // The whole workload; run once untimed first, so that the GEMM autotuning of each shape and
  // the pinned staging buffer's allocation stay out of the figures (METHOD: warm up first).
  const auto workload = [&] {
    Figures f{};
    KVCache cache(cfg);
    auto t0 = std::chrono::steady_clock::now();
    be->forward(cache, std::span<const Token>(toks).first(args.prefill), logits);
    f.prefill_s = seconds_since(t0);
    t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < args.decode; ++i)
      be->forward(cache, std::span<const Token>(toks).subspan(args.prefill + i, 1),
                  std::span<float>(logits).first(cfg.vocab));
    f.decode_s = seconds_since(t0);
    // 3. Eviction vs rebuild: 8 spans of prefill/8 tokens; evict span 2.
    Session s(*be);
    for (size_t i = 0; i < 8; ++i) s.append(i, spans[i]);
    t0 = std::chrono::steady_clock::now();
    f.recomputed = s.evict(2).tokens_recomputed;
    f.evict_s = seconds_since(t0);
    Session never(*be);
    t0 = std::chrono::steady_clock::now();
    for (size_t i = 0; i < 8; ++i)
      if (i != 2) never.append(i, spans[i]);
    f.rebuild_s = seconds_since(t0);
    f.never_size = never.size();
    f.e1 = cache_sha256(s.cache()) == cache_sha256(never.cache()) &&
           std::memcmp(s.logits().data(), never.logits().data(), cfg.vocab * sizeof(float)) == 0;
    return f;
  };
  const Figures cold = workload(), f = workload();
  const bool e1 = cold.e1 && f.e1;
  const double prefill_s = f.prefill_s, decode_s = f.decode_s, evict_s = f.evict_s, rebuild_s = f.rebuild_s;

  std::printf("\n== akv CUDA benchmark: %s, config %s ==\n", prop.name, cfg.name.c_str());
  std::printf("%-44s %s\n", "what", "figure");
  std::printf("%-44s %.2fx (target >= 0.9x; per layer, time-weighted)\n", "matmul: cuBLAS SGEMM time / akv GEMM time",
              blas_ms / ours_ms);
  std::printf("%-44s %.2fx\n", "  the same on SmolLM2-135M's shapes", blas_s2 / ours_s2);
  std::printf("%-44s %.2fx\n", "  per layer as the backend launches them", blas_layer / ours_layer);
  std::printf("%-44s %s\n", "GEMM variants bitwise equal on the device", variants_equal ? "yes" : "NO");
  std::printf("%-44s %.0f tokens/s\n", ("prefill, " + std::to_string(args.prefill) + " tokens, one call").c_str(),
              args.prefill / prefill_s);
  std::printf("%-44s %.0f tokens/s\n", ("decode, " + std::to_string(args.decode) + " tokens after the prefill").c_str(),
              args.decode / decode_s);
  std::printf("%-44s %.3f s (%zu tokens recomputed)\n", "evict span 2 of 8", evict_s, f.recomputed);
  std::printf("%-44s %.3f s (%zu tokens)\n", "rebuild without span 2", rebuild_s, f.never_size);
  std::printf("%-44s %.2f\n", "evict / rebuild", evict_s / rebuild_s);
  std::printf("%-44s %.0f tokens/s\n", "first run's prefill (autotuning included)", args.prefill / cold.prefill_s);
  std::printf("%-44s %s\n", "E1 on the device (evict == never, bitwise)", e1 ? "yes" : "NO");
  return e1 && variants_equal ? 0 : 1;
}
