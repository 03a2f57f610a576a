// akv_real_bench --model PATH.gguf [--threads N] [--runs N] [--steps N] [--only pp512|pp2048|tg] [--witness CMD]
//                [--json F] [--composed] [--kv-types f32,f16,q8_0] [--no-bandwidth] [--depth N]
// The cpu backend on a real GGUF model, measured the way llama.cpp's llama-bench measures:
// prefill of 512 and 2048 random tokens in one append with logits for the last row only (pp),
// decode of single tokens after a 4096-token context (tg at depth 4096, or --depth N); each the median of
// --runs runs after one warm-up. Also the FMA peak and the OpenBLAS kernel name for context;
// where prefill's and decode's time goes (per op step), with OpenBLAS sgemm on the prefill's
// matmul shapes as the machine's float32 GEMM roof; and, with --witness, the wall time and peak
// RSS of a command run as a child under /usr/bin/time. Prints a table and writes the JSON to
// --json. Not a test: figures only.
// --composed: the composed forward over the cpu kernels' table (spec/gate.md GT7, GT8) in place of
// the cpu backend's fused forward, for the A/B of docs/performance.md.
// --kv-types: prefill and decode once per cache type (spec/state.md S5; default f32); the first
// type's figures are also the top-level "prefill" and "decode" of the JSON. Before them, the
// machine's memory bandwidth (bandwidth.hpp: STREAM's triad and a read sweep on --threads
// threads), against which each type's decode is set: the bytes a decode token reads (the packed
// weights and every layer's K and V rows as stored) times tokens/s.
#include <cblas.h>
#include <fmt/format.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "readers/gguf/gguf_weights.hpp"
#include "bench/cpu/bandwidth.hpp"
#include "bench/cpu/common.hpp"
#include "bench/cpu/peak.hpp"
#include "optimized/composed/composed_backend.hpp"
#include "optimized/cpu/c_kernels.hpp"
#include "optimized/cpu/cpu_backend.hpp"

using namespace akv;
using bench::Clock;
using bench::cpu_model;
using bench::flops;
using bench::random_tokens;
using bench::secs;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// OpenBLAS's generic kernels are the fallback for CPUs its build does not know.
bool generic_corename(const std::string& s) {
  std::string l = s;
  for (char& ch : l) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return l.empty() || l.find("generic") != std::string::npos || l == "prescott" || l == "core2" || l == "unknown";
}

// Seconds per op step of the cpu backend's calls while attached: the observer runs on the
// calling thread after each step, so each interval is that step's parallel run and its pool
// hand-off. start() before each call; the residual adds are summed as one op.
struct OpClock {
  std::map<std::string, double> seconds;
  Clock::time_point last = Clock::now();
  void attach(cpu::CpuBackend& b) {
    b.set_op_observer([this](const cpu::OpStep& st) {
      const auto now = Clock::now();
      std::string op = st.op;
      if (op.rfind("add", 0) == 0) op = "add (residuals)";
      seconds[op] += std::chrono::duration<double>(now - last).count();
      last = now;
    });
  }
  void start() { last = Clock::now(); }
};

// Best of `runs` seconds of OpenBLAS sgemm Y (m, d) = X (m, k) W^T, W (d, k) row-major: the
// layout of a prefill matmul, on placeholder values (sgemm's time does not depend on them).
double sgemm_seconds(int m, int k, int d, int runs) {
  std::vector<float> X(static_cast<size_t>(m) * k, 0.5f), W(static_cast<size_t>(d) * k, 0.25f), Y(static_cast<size_t>(m) * d);
  double best = 1e30;
  for (int r = 0; r <= runs; ++r) {  // run 0: warm-up
    const auto t0 = Clock::now();
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, d, k, 1.0f, X.data(), k, W.data(), k, 0.0f, Y.data(), d);
    if (r > 0) best = std::min(best, secs(t0));
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  std::string path, json_out, witness, only, kv_list = "f32";
  bool composed = false, bandwidth = true;
  int threads = 2, runs = 5, steps = 32, depth = 4096;  // depth: the context decode starts at
  for (int i = 1; i < argc; ++i) {
    const bool has = i + 1 < argc;
    if (!std::strcmp(argv[i], "--model") && has) path = argv[++i];
    else if (!std::strcmp(argv[i], "--threads") && has) threads = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--runs") && has) runs = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--steps") && has) steps = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--witness") && has) witness = argv[++i];
    else if (!std::strcmp(argv[i], "--only") && has) only = argv[++i];
    else if (!std::strcmp(argv[i], "--json") && has) json_out = argv[++i];
    else if (!std::strcmp(argv[i], "--composed")) composed = true;
    else if (!std::strcmp(argv[i], "--kv-types") && has) kv_list = argv[++i];
    else if (!std::strcmp(argv[i], "--no-bandwidth")) bandwidth = false;
    else if (!std::strcmp(argv[i], "--depth") && has) depth = std::atoi(argv[++i]);
    else {
      std::cerr << "usage: akv_real_bench --model PATH.gguf [--threads N] [--runs N] [--steps N] [--only pp512|pp2048|tg] [--witness CMD] [--json F] [--composed] [--kv-types f32,f16,q8_0] [--no-bandwidth] [--depth N]\n";
      return 2;
    }
  }
  std::vector<KvType> kv_types;
  try {
    for (size_t at = 0; at <= kv_list.size();) {
      const size_t comma = std::min(kv_list.find(',', at), kv_list.size());
      kv_types.push_back(parse_kv_type(kv_list.substr(at, comma - at)));
      at = comma + 1;
    }
  } catch (const std::exception& e) {
    std::cerr << "akv_real_bench: --kv-types: " << e.what() << "\n";
    return 2;
  }
  if (path.empty() || threads < 1 || runs < 1 || steps < 1 || depth < 1) {
    std::cerr << "akv_real_bench: --model is required; --threads, --runs, --steps, --depth must be positive\n";
    return 2;
  }
  auto t0 = Clock::now();
  std::shared_ptr<const Model> model;
  try {
    model = readers::load_gguf_model(path, "real");
  } catch (const std::exception& e) {
    std::cerr << "akv_real_bench: " << e.what() << "\n";
    return 2;
  }
  const double load_s = secs(t0);
  const Config& c = model->config;
  cpu::CpuBackend fused(model, {"auto", threads});
  const cpu::Isa isa = fused.isa();
  cpu::CpuKernelTable table(isa, threads);
  std::unique_ptr<Backend> comp;
  if (composed) comp = make_composed_backend(model, std::make_shared<const OpSet>(table.table(), nullptr, "cpu"));
  Backend& b = composed ? *comp : static_cast<Backend&>(fused);
  const std::string core = openblas_get_corename() ? openblas_get_corename() : "";
  const bool generic = generic_corename(core);
  const cpu::Isa peak_isa = isa == cpu::Isa::kPortable ? cpu::Isa::kAvx2 : isa;
  const double peak = bench::fma_peak_gflops(peak_isa, threads);

  nlohmann::json J;
  J["machine"] = {{"cpu", cpu_model()}, {"hardware_threads", std::thread::hardware_concurrency()},
                  {"isa", cpu::isa_name(isa)}, {"threads", threads}, {"fma_peak_gflops", peak},
                  {"openblas_corename", core}, {"openblas_generic_fallback", generic}};
  J["model"] = {{"path", path}, {"hidden", c.hidden}, {"layers", c.n_layers}, {"heads", c.n_heads},
                {"kv_heads", c.n_kv_heads}, {"head_dim", c.head_dim}, {"ffn", c.ffn}, {"vocab", c.vocab},
                {"load_seconds", load_s}};
  J["runs"] = runs;
  bench::Bandwidth bw;
  if (bandwidth) {
    bw = bench::memory_bandwidth(threads);
    J["machine"]["bandwidth"] = {{"triad_gbs", bw.triad_gbs}, {"read_gbs", bw.read_gbs}, {"array_mib", bw.array_bytes >> 20},
                                 {"threads", threads}};
  }
  // The bytes one decode token reads besides the cache: every packed matrix once (K15's panels).
  size_t weight_bytes = 0;
  {
    const auto pm = cpu::packed_model(model);
    auto add = [&](const cpu::PackedMatrix& m) { weight_bytes += m.panel_bytes() * static_cast<size_t>(m.panels()); };
    for (const auto& L : pm->layers) add(L.wqkv), add(L.wo), add(L.w13), add(L.w2);
    add(pm->wcls);
  }
  J["model"]["packed_weight_bytes"] = weight_bytes;
  openblas_set_num_threads(threads);
  J["forward"] = composed ? "composed over the cpu table" : "cpu backend (fused)";
  fmt::print("akv cpu {}: {} ({} hardware threads), ISA {}, {} threads, FMA peak {:.1f} GFLOP/s\n",
             composed ? "kernels, composed forward" : "backend", cpu_model(),
             std::thread::hardware_concurrency(), cpu::isa_name(isa), threads, peak);
  fmt::print("OpenBLAS core: {}{}\n", core.empty() ? "(none)" : core,
             generic ? "  ** generic/fallback kernel: do not quote ratios against OpenBLAS **" : "");
  fmt::print("model {}: hidden {}, {} layers, {} heads / {} KV heads, head dim {}, ffn {}, vocab {} (load {:.2f} s), "
             "packed weights {:.1f} MB\n",
             path, c.hidden, c.n_layers, c.n_heads, c.n_kv_heads, c.head_dim, c.ffn, c.vocab, load_s, weight_bytes / 1e6);
  if (bandwidth)
    fmt::print("memory bandwidth ({} threads, {} MiB arrays): STREAM triad {:.1f} GB/s, read {:.1f} GB/s\n", threads,
               bw.array_bytes >> 20, bw.triad_gbs, bw.read_gbs);

  std::vector<float> logits(c.vocab);
  // One forward of `t` on `cache`, logits of its last row only.
  auto append_last = [&](KVCache& cache, std::span<const Token> t) {
    const uint32_t row[1] = {static_cast<uint32_t>(t.size() - 1)};
    b.forward_rows(cache, t, row, logits);
  };

  auto wanted = [&](const std::string& test) { return only.empty() || only == test; };
  for (size_t ti = 0; ti < kv_types.size(); ++ti) {
  const KvType kv = kv_types[ti];
  nlohmann::json T;  // this type's figures
  fmt::print("-- cache {} ({} bytes of K and V a token)\n", kv_type_name(kv), 2 * c.n_layers * kv_row_bytes(kv, c.kv_dim()));
  // Prefill (pp): one append of n tokens on an empty cache, last row's logits.
  for (size_t n : {size_t{512}, size_t{2048}}) {
    if (!wanted("pp" + std::to_string(n))) continue;
    const auto t = random_tokens(n, 1, c.vocab);
    std::vector<double> s;
    for (int r = 0; r <= runs; ++r) {  // run 0: warm-up
      KVCache cache(c, kv);
      const auto t1 = Clock::now();
      append_last(cache, t);
      if (r > 0) s.push_back(secs(t1));
    }
    const double med = median(s);
    T["prefill"].push_back({{"tokens", n}, {"seconds", s}, {"median_seconds", med}, {"tokens_per_second", n / med},
                            {"gflops", flops(c, 0, n, 1) / med / 1e9}});
    fmt::print("prefill {:5} tokens: {:8.1f} tokens/s  (median {:.3f} s of {}; {:.1f} GFLOP/s = {:.0f}% of peak)\n", n, n / med,
               med, runs, flops(c, 0, n, 1) / med / 1e9, 100 * flops(c, 0, n, 1) / med / 1e9 / peak);
    if (!composed) {
      // Where prefill's time goes, one more run: the matmuls, attention and the rest, each
      // with its rate where its FLOPs are counted (bench::flops's terms); and OpenBLAS sgemm on
      // the layers' matmul shapes at the same rows, the machine's float32 GEMM roof beside ours.
      OpClock clk;
      clk.attach(fused);
      KVCache cache(c, kv);
      clk.start();
      const auto t1 = Clock::now();
      append_last(cache, t);
      const double total = secs(t1);
      fused.set_op_observer({});
      double mm_s = 0, att_s = 0;
      for (const auto& [op, sec] : clk.seconds) {
        if (op.rfind("matmul", 0) == 0 && op != "matmul (classifier)") mm_s += sec;
        if (op == "attention") att_s += sec;
      }
      const double mm_f = bench::layer_matmul_flops(c, n), att_f = bench::attention_flops(c, 0, n);
      const int m = static_cast<int>(n);
      const double blas_s =
          c.n_layers * (sgemm_seconds(m, c.hidden, c.q_dim() + 2 * c.kv_dim(), runs) + sgemm_seconds(m, c.q_dim(), c.hidden, runs) +
                        sgemm_seconds(m, c.hidden, 2 * c.ffn, runs) + sgemm_seconds(m, c.ffn, c.hidden, runs));
      const double rest_s = total - mm_s - att_s;
      fmt::print("  this run {:.3f} s: layer matmuls {:.3f} s ({:.0f}%, {:.1f} GFLOP/s = {:.0f}% of peak), attention {:.3f} s "
                 "({:.0f}%, {:.1f} GFLOP/s = {:.0f}%), the rest {:.3f} s ({:.0f}%)\n",
                 total, mm_s, 100 * mm_s / total, mm_f / mm_s / 1e9, 100 * mm_f / mm_s / 1e9 / peak, att_s, 100 * att_s / total,
                 att_f / att_s / 1e9, 100 * att_f / att_s / 1e9 / peak, rest_s, 100 * rest_s / total);
      fmt::print("  OpenBLAS sgemm, the same matmuls ({} threads): {:.3f} s, {:.1f} GFLOP/s = {:.0f}% of peak\n", threads,
                 blas_s, mm_f / blas_s / 1e9, 100 * mm_f / blas_s / 1e9 / peak);
      T["prefill"].back()["breakdown"] = {{"seconds", total},          {"matmul_seconds", mm_s},
                                          {"matmul_gflops", mm_f / mm_s / 1e9}, {"attention_seconds", att_s},
                                          {"attention_gflops", att_f / att_s / 1e9}, {"rest_seconds", rest_s},
                                          {"openblas_sgemm_seconds", blas_s}, {"openblas_sgemm_gflops", mm_f / blas_s / 1e9}};
    }
  }

  // Decode (tg) at depth 4096: `steps` single-token appends after a 4096-token context.
  if (wanted("tg")) {
    const auto ctx = static_cast<size_t>(depth);
    const auto t = random_tokens(ctx + steps, 3, c.vocab);
    KVCache cache(c, kv);
    append_last(cache, std::span<const Token>(t.data(), ctx));
    std::vector<double> s;
    for (int r = 0; r <= runs; ++r) {
      cache.truncate(ctx);
      const auto t1 = Clock::now();
      for (int i = 0; i < steps; ++i) append_last(cache, std::span<const Token>(&t[ctx + i], 1));
      if (r > 0) s.push_back(secs(t1));
    }
    const double med = median(s);
    // Bytes a decode token reads: the weights once, and K and V of every layer at its position
    // (the mean over the steps: ctx + steps / 2 keys), as stored.
    const double kv_bytes = 2.0 * c.n_layers * (static_cast<double>(ctx) + 0.5 * steps) * static_cast<double>(kv_row_bytes(kv, c.kv_dim()));
    const double bytes = kv_bytes + static_cast<double>(weight_bytes);
    const double gbs = bytes * steps / med / 1e9;
    T["decode"] = {{"context", ctx}, {"steps", steps}, {"seconds", s}, {"median_seconds", med},
                   {"tokens_per_second", steps / med}, {"bytes_per_token", bytes}, {"kv_bytes_per_token", kv_bytes},
                   {"weight_bytes_per_token", weight_bytes}, {"gbs", gbs}};
    if (bandwidth) T["decode"]["fraction_of_triad"] = gbs / bw.triad_gbs, T["decode"]["fraction_of_read"] = gbs / bw.read_gbs;
    fmt::print("decode at context {}: {:8.1f} tokens/s  (median of {} runs of {} steps); {:.1f} MB a token ({:.1f} MB K/V, {:.1f} MB "
               "weights) = {:.1f} GB/s{}\n",
               ctx, steps / med, runs, steps, bytes / 1e6, kv_bytes / 1e6, weight_bytes / 1e6, gbs,
               bandwidth ? fmt::format(" = {:.0f}% of the triad, {:.0f}% of the read sweep", 100 * gbs / bw.triad_gbs,
                                       100 * gbs / bw.read_gbs)
                         : std::string());
    if (!composed) {
      // Where decode's time goes: the time from one op step to the next (the observer runs on
      // the calling thread after each step, so each interval is that step's parallel run and
      // its pool hand-off), summed over `steps` tokens; and one empty pool run, the
      // synchronisation each step pays at least once.
      OpClock clk;
      clk.attach(fused);
      cache.truncate(ctx);
      const auto t1 = Clock::now();
      for (int i = 0; i < steps; ++i) {
        clk.start();
        append_last(cache, std::span<const Token>(&t[ctx + i], 1));
      }
      const double total = secs(t1);
      fused.set_op_observer({});
      const int kSync = 20000;
      const auto t2 = Clock::now();
      for (int i = 0; i < kSync; ++i) fused.pool().run(threads, [](int, int) {});
      const double sync_us = secs(t2) / kSync * 1e6;
      // Pool runs of a one-row step that reach the threads (cpu_backend.cpp; a one-item run stays on
      // the caller): per layer the four matmuls and attention, then the classifier.
      const int runs_per_token = c.n_layers * 5 + 1;
      nlohmann::json B;
      fmt::print("decode breakdown at context {} ({} steps, {:.2f} ms a token):\n", ctx, steps, 1e3 * total / steps);
      for (const auto& [op, sec] : clk.seconds) {
        B[op] = sec / steps * 1e3;
        fmt::print("  {:28} {:7.3f} ms a token  {:5.1f}%\n", op, 1e3 * sec / steps, 100 * sec / total);
      }
      fmt::print("  empty pool run: {:.2f} us; x {} runs a token = {:.3f} ms a token ({:.1f}%)\n", sync_us, runs_per_token,
                 sync_us * runs_per_token / 1e3, 100 * sync_us * runs_per_token / 1e6 / (total / steps));
      T["decode_breakdown"] = {{"ms_per_token", 1e3 * total / steps}, {"ops_ms_per_token", B},
                               {"empty_pool_run_us", sync_us}, {"pool_runs_per_token", runs_per_token}};
      if (B.contains("attention")) {  // the attention step alone against the cache bytes it reads
        const double att_gbs = kv_bytes / (B["attention"].get<double>() * 1e-3) / 1e9;
        T["decode_breakdown"]["attention_gbs"] = att_gbs;
        fmt::print("  attention reads {:.1f} MB of K/V a token: {:.1f} GB/s{}\n", kv_bytes / 1e6, att_gbs,
                   bandwidth ? fmt::format(" ({:.0f}% of the read sweep)", 100 * att_gbs / bw.read_gbs) : std::string());
      }
    }
  }
  J["by_kv_type"][kv_type_name(kv)] = T;
  if (ti == 0)  // the first type's figures at the top level, as before types (scripts/bench-real reads them)
    for (const char* k : {"prefill", "decode", "decode_breakdown"})
      if (T.contains(k)) J[k] = T[k];
  }
  {
    struct rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    J["bench_peak_rss_mib"] = static_cast<double>(ru.ru_maxrss) / 1024;
    fmt::print("this process: peak RSS {:.0f} MiB\n", static_cast<double>(ru.ru_maxrss) / 1024);
  }

  // The witness, a child process under /usr/bin/time: wall seconds and peak RSS (KiB).
  if (!witness.empty()) {
    const std::string tf = "/tmp/akv_real_bench." + std::to_string(getpid()) + ".time";
    const std::string cmd = "/usr/bin/time -o " + tf + " -f '%e %M' " + witness + " >/dev/null 2>&1";
    const int rc = std::system(cmd.c_str());
    double wall = -1, rss_kib = -1;
    if (std::ifstream in(tf); in) {
      // The last line holds the figures (a failing command adds a "Command exited" line before).
      std::string line, last_line;
      while (std::getline(in, line))
        if (!line.empty()) last_line = line;
      std::sscanf(last_line.c_str(), "%lf %lf", &wall, &rss_kib);
    }
    std::remove(tf.c_str());
    const int exit_code = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
    J["witness"] = {{"command", witness}, {"exit_code", exit_code}, {"wall_seconds", wall}, {"peak_rss_mib", rss_kib / 1024}};
    fmt::print("witness: {:.2f} s wall, peak RSS {:.0f} MiB, exit {}  ({})\n", wall, rss_kib / 1024, exit_code, witness);
  }
  if (!json_out.empty()) std::ofstream(json_out) << J.dump(2) << "\n";
  return 0;
}
