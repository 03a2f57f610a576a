// akv_bench [--out DIR] [--threads N] [--quick]: the CPU backend's performance report.
// Everything is measured in this one run and reported as ratios within it: the FMA peak, prefill
// GFLOP/s of the `bench` model, our matmul against OpenBLAS sgemm on the model's shapes, the
// scalar reference, decode at context 4096, eviction against a full rebuild, memory.
// Writes DIR/bench.json, DIR/eviction.svg, DIR/gflops.svg. Other processes sharing the cores
// lower every figure; the ratios are what to read.
#include <cblas.h>
#include <fmt/format.h>
#include <sys/resource.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "bench/cpu/common.hpp"
#include "bench/cpu/peak.hpp"
#include "bench/cpu/svg.hpp"
#include "optimized/cpu/cpu_backend.hpp"
#include "reference/session.hpp"

extern "C" void openblas_set_num_threads(int);

using namespace akv;
using bench::Clock;
using bench::cpu_model;
using bench::peak_rss_kib;
using bench::secs;

namespace {

// Seconds of one forward of `t` on a fresh cache.
double time_prefill(Backend& b, const std::vector<Token>& t) {
  KVCache cache(b.model().config);
  std::vector<float> logits(t.size() * b.model().config.vocab);
  const auto t0 = Clock::now();
  b.forward(cache, t, logits);
  return secs(t0);
}

}  // namespace

int main(int argc, char** argv) {
  std::string out_dir = "docs/perf";
  int threads = 2;
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--out") && i + 1 < argc) out_dir = argv[++i];
    else if (!std::strcmp(argv[i], "--threads") && i + 1 < argc) threads = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--quick")) quick = true;
    else {
      std::cerr << "usage: akv_bench [--out DIR] [--threads N] [--quick]\n";
      return 2;
    }
  }
  if (threads < 1) {
    std::cerr << "akv_bench: --threads must be a positive integer\n";
    return 2;
  }
  // Fail before minutes of measuring, not after: the output folder must be writable.
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  if (ec || !std::ofstream(out_dir + "/bench.json")) {
    std::cerr << "akv_bench: cannot write to " << out_dir << (ec ? ": " + ec.message() : "") << "\n";
    return 2;
  }
  nlohmann::json J;
  const Config cfg = config_by_name("bench");
  auto model = make_model(cfg, 1);
  cpu::CpuBackend cpu_b(model, {"auto", threads});
  const cpu::Isa isa = cpu_b.isa();
  J["machine"] = {{"cpu", cpu_model()}, {"hardware_threads", std::thread::hardware_concurrency()}, {"isa", cpu::isa_name(isa)},
                  {"threads", threads}};
  double params = static_cast<double>(model->weights.tok_emb.size() + classifier(model->weights).size() + model->weights.final_norm.size());
  for (const auto& L : model->weights.layers)
    params += L.wq.size() + L.wk.size() + L.wv.size() + L.wo.size() + L.w1.size() + L.w2.size() + L.w3.size() +
              L.attn_norm.size() + L.ffn_norm.size();
  J["model"] = {{"name", cfg.name}, {"params", params}, {"hidden", cfg.hidden}, {"layers", cfg.n_layers},
                {"heads", cfg.n_heads}, {"kv_heads", cfg.n_kv_heads}, {"head_dim", cfg.head_dim}, {"ffn", cfg.ffn}};
  fmt::print("machine: {} ({} hardware threads), ISA {}, {} threads\n", cpu_model(), std::thread::hardware_concurrency(),
             cpu::isa_name(isa), threads);
  fmt::print("model bench: {:.1f}M parameters, hidden {}, {} layers, {} heads / {} KV heads, head dim {}, ffn {}\n",
             params / 1e6, cfg.hidden, cfg.n_layers, cfg.n_heads, cfg.n_kv_heads, cfg.head_dim, cfg.ffn);

  // 1. FMA peak, one thread and all threads together.
  const cpu::Isa peak_isa = isa == cpu::Isa::kPortable ? cpu::Isa::kAvx2 : isa;
  const double peak1 = bench::fma_peak_gflops(peak_isa, 1), peak = bench::fma_peak_gflops(peak_isa, threads);
  J["peak_gflops"] = {{"one_thread", peak1}, {"threads", peak}};
  fmt::print("FMA peak: {:.1f} GFLOP/s on 1 thread, {:.1f} on {}\n", peak1, peak, threads);

  // 2. Prefill GFLOP/s against sequence length (the last one is the headline 2048).
  std::vector<size_t> lens = quick ? std::vector<size_t>{128, 512} : std::vector<size_t>{128, 256, 512, 1024, 2048};
  bench::Series gf{"cpu backend prefill", "#1f77b4", {}}, pk{"FMA peak", "#999999", {}};
  for (size_t n : lens) {
    const double s = time_prefill(cpu_b, bench::random_tokens(n, 1, cfg.vocab));
    const double g = bench::flops(cfg, 0, n, n) / s / 1e9;
    gf.points.push_back({static_cast<double>(n), g});
    pk.points.push_back({static_cast<double>(n), peak});
    J["prefill"].push_back({{"tokens", n}, {"seconds", s}, {"gflops", g}, {"fraction_of_peak", g / peak}});
    fmt::print("prefill {:5} tokens: {:7.3f} s  {:6.1f} GFLOP/s  {:5.1f}% of peak\n", n, s, g, 100 * g / peak);
  }
  const double prefill_gflops = gf.points.back().second;

  // 3. Matmul on the model's shapes, M = 2048 rows: ours (invariant) vs OpenBLAS sgemm.
  openblas_set_num_threads(threads);
  const int M = quick ? 512 : 2048;
  struct Shape {
    const char* name;
    const cpu::PackedMatrix* W;
  };
  const auto& P = cpu::packed_model(model)->layers[0];
  const auto& Wcls = cpu::packed_model(model)->wcls;
  fmt::print("matmul, M = {} rows: ours vs OpenBLAS sgemm ({} threads each)\n", M, threads);
  double ours_total = 0, blas_total = 0;
  for (Shape sh : {Shape{"qkv", &P.wqkv}, Shape{"wo", &P.wo}, Shape{"w1w3", &P.w13}, Shape{"w2", &P.w2}, Shape{"cls", &Wcls}}) {
    const int n = sh.W->n, d = sh.W->d;
    std::vector<float> X(static_cast<size_t>(M) * n), Wrm(static_cast<size_t>(d) * n), Y(static_cast<size_t>(M) * d);
    for (size_t i = 0; i < X.size(); ++i) X[i] = static_cast<float>((i * 7919) % 1000) * 1e-3f - 0.5f;
    for (int i = 0; i < d; ++i)  // unpack the panels into row-major W for sgemm
      for (int k = 0; k < n; ++k) Wrm[static_cast<size_t>(i) * n + k] = sh.W->panel(i / 16)[static_cast<size_t>(k) * 16 + i % 16];
    double best_ours = 1e9, best_blas = 1e9;
    for (int rep = 0; rep < 3; ++rep) {
      auto t0 = Clock::now();
      cpu_b.pool().run(sh.W->panels(), [&](int p0, int p1) { cpu_b.kernels().matmul(X.data(), n, M, *sh.W, p0, p1, Y.data(), d); });
      best_ours = std::min(best_ours, secs(t0));
      t0 = Clock::now();
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, d, n, 1.0f, X.data(), n, Wrm.data(), n, 0.0f, Y.data(), d);
      best_blas = std::min(best_blas, secs(t0));
    }
    const double f = 2.0 * M * n * d;
    ours_total += best_ours;
    blas_total += best_blas;
    J["matmul"].push_back({{"shape", sh.name}, {"M", M}, {"n", n}, {"d", d}, {"ours_gflops", f / best_ours / 1e9},
                           {"openblas_gflops", f / best_blas / 1e9}, {"ours_over_openblas", best_blas / best_ours}});
    fmt::print("  {:5} {:4}x{:<5} ours {:6.1f} GFLOP/s  OpenBLAS {:6.1f}  ratio {:.2f}x\n", sh.name, n, d, f / best_ours / 1e9,
               f / best_blas / 1e9, best_blas / best_ours);
  }
  J["matmul_total_ours_over_openblas"] = blas_total / ours_total;
  fmt::print("  all shapes (time-weighted): ours / OpenBLAS speed = {:.2f}x\n", blas_total / ours_total);

  // 4. The scalar reference on a short prompt (it runs at ~1 GFLOP/s), against ours on the same prompt.
  {
    const size_t n = quick ? 16 : 64;
    auto ref_b = make_reference_backend(model);
    const auto t = bench::random_tokens(n, 2, cfg.vocab);
    const double sr = time_prefill(*ref_b, t), sc = time_prefill(cpu_b, t);
    const double gr = bench::flops(cfg, 0, n, n) / sr / 1e9;
    J["reference"] = {{"tokens", n}, {"seconds", sr}, {"gflops", gr}, {"cpu_seconds_same_prompt", sc},
                      {"speedup_same_prompt", sr / sc}, {"speedup_vs_2048_prefill_rate", prefill_gflops / gr}};
    fmt::print("reference, {} tokens: {:.2f} s = {:.2f} GFLOP/s; cpu on the same prompt {:.3f} s: {:.0f}x; "
               "cpu 2048-token rate / reference rate: {:.0f}x\n",
               n, sr, gr, sc, sr / sc, prefill_gflops / gr);
  }

  // 5. Decode at context 4096.
  {
    const size_t ctx = quick ? 512 : 4096, steps = 32;
    KVCache cache(cfg);
    const auto t = bench::random_tokens(ctx + steps, 3, cfg.vocab);
    std::vector<float> logits(ctx * cfg.vocab);
    cpu_b.forward(cache, std::span<const Token>(t.data(), ctx), logits);
    const auto t0 = Clock::now();
    for (size_t i = 0; i < steps; ++i) cpu_b.forward(cache, std::span<const Token>(&t[ctx + i], 1), std::span<float>(logits.data(), cfg.vocab));
    const double s = secs(t0);
    J["decode"] = {{"context", ctx}, {"steps", steps}, {"tokens_per_second", steps / s}};
    fmt::print("decode at context {}: {:.1f} tokens/s\n", ctx, steps / s);
  }

  // 6. Eviction in a 2048-token conversation of 32 spans of 64 tokens vs a full rebuild.
  {
    const size_t spans = 32, span_len = quick ? 16 : 64;
    std::vector<std::vector<Token>> conv;
    for (size_t i = 0; i < spans; ++i) conv.push_back(bench::random_tokens(span_len, 100 + static_cast<uint32_t>(i), cfg.vocab));
    Session base(cpu_b);
    auto t0 = Clock::now();
    for (size_t i = 0; i < spans; ++i) base.append(i, conv[i]);
    const double build = secs(t0);
    J["eviction"]["build_seconds"] = build;
    J["eviction"]["tokens"] = base.size();
    const double kv_bytes = 2.0 * cfg.n_layers * cfg.kv_dim() * sizeof(float);
    const double book = (base.tokens().capacity() * sizeof(Token) + base.entry_spans().capacity() * sizeof(SpanId) +
                         base.spans().capacity() * sizeof(SpanInfo)) / static_cast<double>(base.size());
    J["memory"] = {{"kv_bytes_per_token", kv_bytes}, {"bookkeeping_bytes_per_token", book}};
    bench::Series ev{"evict (recompute survivors)", "#d62728", {}}, rb{"full rebuild without the span", "#2ca02c", {}};
    fmt::print("eviction, {} tokens in {} spans (build {:.2f} s):\n", base.size(), spans, build);
    for (double rel : {0.1, 0.3, 0.5, 0.7, 0.9}) {
      const size_t idx = static_cast<size_t>(rel * spans + 0.5);
      Session s = base;
      t0 = Clock::now();
      const EvictStats st = s.evict(idx);
      const double te = secs(t0);
      nlohmann::json e = {{"relative_position", rel}, {"span", idx}, {"evict_seconds", te},
                          {"tokens_recomputed", st.tokens_recomputed}};
      ev.points.push_back({100 * rel, te});
      std::string line = fmt::format("  span at {:3.0f}%: evict {:.3f} s ({} tokens recomputed)", 100 * rel, te, st.tokens_recomputed);
      if (rel == 0.1 || rel == 0.5 || rel == 0.9) {
        Session never(cpu_b);
        t0 = Clock::now();
        for (size_t i = 0; i < spans; ++i)
          if (i != idx) never.append(i, conv[i]);
        const double tr = secs(t0);
        const bool exact = std::memcmp(never.logits().data(), s.logits().data(), cfg.vocab * sizeof(float)) == 0;
        e["rebuild_seconds"] = tr;
        e["evict_over_rebuild"] = te / tr;
        e["survivor_share"] = static_cast<double>(st.tokens_recomputed) / never.size();
        e["exact"] = exact;
        rb.points.push_back({100 * rel, tr});
        line += fmt::format("; rebuild {:.3f} s; ratio {:.2f} (survivor share {:.2f}); evict == never: {}", tr, te / tr,
                            static_cast<double>(st.tokens_recomputed) / never.size(), exact ? "yes" : "NO");
      }
      J["eviction"]["cases"].push_back(e);
      fmt::print("{}\n", line);
    }
    bench::write_svg(out_dir + "/eviction.svg", "Eviction cost vs span position (bench model, 2048 tokens)",
                     "evicted span position (% of the conversation)", "seconds", {ev, rb});
  }
  bench::write_svg(out_dir + "/gflops.svg", "Prefill GFLOP/s vs sequence length (bench model)", "prompt tokens", "GFLOP/s",
                   {gf, pk});
  J["memory"]["peak_rss_mib"] = peak_rss_kib() / 1024.0;
  fmt::print("memory: KV {} bytes/token, bookkeeping {:.1f} bytes/token, peak RSS {:.0f} MiB\n",
             J["memory"]["kv_bytes_per_token"].get<double>(), J["memory"]["bookkeeping_bytes_per_token"].get<double>(),
             peak_rss_kib() / 1024.0);
  std::ofstream(out_dir + "/bench.json") << J.dump(2) << "\n";
  fmt::print("wrote {}/bench.json, eviction.svg, gflops.svg\n", out_dir);
  return 0;
}
