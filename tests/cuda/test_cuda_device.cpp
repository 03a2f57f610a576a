// The CUDA backend on a real device (spec/kernels-cuda.md G7, G8, G10, G11). Every test skips,
// saying so, when no CUDA device is present; scripts/gpu-check runs them on a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

#include "optimized/cuda/arith/gemm.hpp"
#include "optimized/cuda/device/cuda_backend.hpp"
#include "optimized/cuda/device/dev_buffer.hpp"
#include "optimized/cuda/device/kernels.cuh"
#include "optimized/cuda/emu/emu_backend.hpp"
#include "optimized/cuda/emu/emu_ops.hpp"
#include "harness_support.hpp"
#include "support.hpp"
#include "verify/check/invariance.hpp"
#include "verify/check/per_op.hpp"
#include "verify/check/run.hpp"
#include "runtime/backends.hpp"
#include "verify/compare.hpp"
#include "runtime/digest.hpp"

using namespace akv;
using check::run_chunked;
using check::run_diff;

namespace {

#define AKV_REQUIRE_DEVICE()                                                                   \
  do {                                                                                         \
    if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device: GPU test not run (scripts/gpu-check on a GPU)"; \
  } while (0)

std::unique_ptr<Backend> poisoned(std::unique_ptr<Backend> b) {
  b->set_scratch_poison(std::numeric_limits<float>::quiet_NaN());
  return b;
}

}  // namespace

TEST(G9_Registry, CudaIsListedWithADevice) {
  AKV_REQUIRE_DEVICE();
  const auto names = backend_names();
  EXPECT_NE(std::find(names.begin(), names.end(), "cuda"), names.end());
  EXPECT_EQ(make_backend("cuda", test::tiny())->name(), "cuda");
}

TEST(G10_DeviceEqualsEmu, TinyAndSmallEveryChunking) {
  AKV_REQUIRE_DEVICE();
  for (const char* cfg : {"tiny", "small"}) {
    auto model = make_model(config_by_name(cfg), 1);
    auto dev = poisoned(make_cuda_backend(model)), emu = poisoned(make_cuda_emu_backend(model));
    const auto toks = test::tokens(300, 7, model->config.vocab);
    for (const std::vector<size_t>& ch : {std::vector<size_t>{300}, {64, 1, 63, 100, 72}, {299, 1}}) {
      SCOPED_TRACE(cfg);
      EXPECT_EQ(run_diff(run_chunked(*dev, toks, ch), run_chunked(*emu, toks, ch)), "");
    }
  }
}

TEST(G10_DeviceEqualsEmu, GemmEveryVariantOddShapesAndUnalignedRows) {
  // G2 on the device: every kernel variant, on shapes with edges in M, n and d (n % 4 != 0
  // and a misaligned X take the scalar loader), equals the emulation's dot_splitk bitwise:
  // split-K shapes (d <= kSplitKMaxD, n > kSplitKAlign: 1 to 8 chunks, a short last one)
  // and one-chunk shapes (d > kSplitKMaxD, tiny n).
  AKV_REQUIRE_DEVICE();
  struct S { int M, n, d, x_offset; };
  for (const S sh : {S{1, 32, 288, 0}, S{3, 7, 5, 0}, S{65, 33, 129, 0}, S{130, 768, 257, 0}, S{257, 64, 100, 1},
                     S{2048, 768, 256, 0}, S{17, 1, 3, 0}, S{40, 0, 9, 0}, S{64, 2048, 768, 0}, S{9, 1536, 576, 0},
                     S{5, 17, 40, 0}, S{33, 1000, 1025, 0}, S{3, 690, 7, 1}}) {
    SCOPED_TRACE(testing::Message() << "M=" << sh.M << " n=" << sh.n << " d=" << sh.d << " x+" << sh.x_offset);
    std::vector<float> x(static_cast<size_t>(sh.M) * sh.n + sh.x_offset), w(static_cast<size_t>(sh.d) * sh.n);
    uint32_t r = 12345u + static_cast<uint32_t>(sh.M * 31 + sh.n);
    const auto draw = [&r] {  // signs, a 2^±20 spread of magnitudes, an exact zero now and then
      r = r * 1664525u + 1013904223u;
      if ((r >> 28) == 0) return 0.0f;
      return std::ldexp(static_cast<float>(static_cast<int>(r >> 8) - (1 << 23)) / float(1 << 23),
                        static_cast<int>((r >> 3) % 41) - 20);
    };
    for (float& v : x) v = draw();
    for (float& v : w) v = draw();
    std::vector<float> want(static_cast<size_t>(sh.M) * sh.d), got(want.size());
    cuda::emu::gemm(want.data(), x.data() + sh.x_offset, w.data(), sh.M, sh.n, sh.d);
    cuda::dev::Buffer<float> dx(x), dw(w), dout(want.size() + 1);
    const int d0 = sh.d + 37;  // the batch's wider product
    std::vector<float> w0(static_cast<size_t>(d0) * sh.n);
    for (float& e : w0) e = draw();
    std::vector<float> want0(static_cast<size_t>(sh.M) * d0), got0(want0.size());
    cuda::emu::gemm(want0.data(), x.data() + sh.x_offset, w0.data(), sh.M, sh.n, d0);
    cuda::dev::Buffer<float> dw0(w0), dout0(want0.size() + 1), dw_mis(w.size() + 1), dout_mis(want.size() + 2);
    // Split-K partials (G2): one product's, and the 3-product batch's, NaN before each launch.
    cuda::dev::Buffer<float> work1(cuda::dev::gemm_work_floats(sh.M, sh.n, sh.d) + 1),
        workb(cuda::dev::gemm_work_floats(sh.M, sh.n, d0) + 2 * cuda::dev::gemm_work_floats(sh.M, sh.n, sh.d) + 1);
    cuda::dev::check(cudaMemcpy(dw_mis.get() + 1, w.data(), w.size() * sizeof(float), cudaMemcpyHostToDevice), "upload");
    for (int v = 0; v < cuda::kGemmVariantCount; ++v) {
      cuda::dev::fill(dout.get(), dout.size(), std::numeric_limits<float>::quiet_NaN(), nullptr);
      cuda::dev::fill(work1.get(), work1.size(), std::numeric_limits<float>::quiet_NaN(), nullptr);
      cuda::dev::gemm_variant(v, dout.get(), dx.get() + sh.x_offset, dw.get(), sh.M, sh.n, sh.d, work1.get(), work1.size(),
                              nullptr);
      cuda::dev::check(cudaMemcpy(got.data(), dout.get(), got.size() * sizeof(float), cudaMemcpyDeviceToHost), "download");
      EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0) << cuda::kGemmVariants[v].name;
      float guard = 0.0f;  // the element past the output: never written
      cuda::dev::check(cudaMemcpy(&guard, dout.get() + want.size(), sizeof(float), cudaMemcpyDeviceToHost), "download");
      EXPECT_TRUE(std::isnan(guard)) << cuda::kGemmVariants[v].name << " wrote past its output";
      // A batched launch of three products sharing X: a wider one, this one, and this one
      // again on a misaligned W and output (the scalar loader and stores). Blocks past a
      // product's columns exit; every output equals the emulation's.
      for (cuda::dev::Buffer<float>* o : {&dout0, &dout, &dout_mis, &workb})
        cuda::dev::fill(o->get(), o->size(), std::numeric_limits<float>::quiet_NaN(), nullptr);
      cuda::dev::GemmBatch b;
      b.count = 3;
      b.W[0] = dw0.get(), b.out[0] = dout0.get(), b.d[0] = d0;
      b.W[1] = dw.get(), b.out[1] = dout.get(), b.d[1] = sh.d;
      b.W[2] = dw_mis.get() + 1, b.out[2] = dout_mis.get() + 1, b.d[2] = sh.d;
      b.work = workb.get() + 1, b.work_floats = workb.size() - 1;  // misaligned partials: the scalar loader's path too
      cuda::dev::gemm_batch_variant(v, b, dx.get() + sh.x_offset, sh.M, sh.n, nullptr);
      const auto fetch = [](std::vector<float>& host, const float* dev) {
        cuda::dev::check(cudaMemcpy(host.data(), dev, host.size() * sizeof(float), cudaMemcpyDeviceToHost), "download");
      };
      fetch(got0, dout0.get());
      EXPECT_EQ(std::memcmp(got0.data(), want0.data(), got0.size() * sizeof(float)), 0) << cuda::kGemmVariants[v].name << " batched, product 0";
      fetch(got, dout.get());
      EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0) << cuda::kGemmVariants[v].name << " batched, product 1";
      fetch(got, dout_mis.get() + 1);
      EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)), 0) << cuda::kGemmVariants[v].name << " batched, misaligned W and out";
      std::vector<float> guards(3);
      cuda::dev::check(cudaMemcpy(&guards[0], dout0.get() + want0.size(), sizeof(float), cudaMemcpyDeviceToHost), "download");
      cuda::dev::check(cudaMemcpy(&guards[1], dout.get() + want.size(), sizeof(float), cudaMemcpyDeviceToHost), "download");
      cuda::dev::check(cudaMemcpy(&guards[2], dout_mis.get() + 1 + want.size(), sizeof(float), cudaMemcpyDeviceToHost), "download");
      for (float g : guards) EXPECT_TRUE(std::isnan(g)) << cuda::kGemmVariants[v].name << " batched: wrote past an output";
    }
  }
}

TEST(G10_DeviceEqualsEmu, LongerThanOneChunk) {
  AKV_REQUIRE_DEVICE();
  auto model = make_model(config_by_name("tiny"), 2);  // tiny: the emulation runs on the CPU
  auto dev = poisoned(make_cuda_backend(model)), emu = poisoned(make_cuda_emu_backend(model));
  const size_t n = cuda::kMaxRows + 100;
  const auto toks = test::tokens(n, 9, model->config.vocab);
  EXPECT_EQ(run_diff(run_chunked(*dev, toks, {n}), run_chunked(*emu, toks, {n})), "");
}

TEST(G10_DeviceEqualsEmu, DecodeGraphsAndBatches) {
  // Decode as replayed CUDA graphs (G8): one session decoding token by token past 1024 keys
  // (the attention scratch grows, every graph is dropped and re-captured), with one logits
  // row and with none; then three sessions of different lengths decoding together through
  // forward_batch (one fused chunk, a graph per shape), a 2-token step among them. Every
  // cache byte and logit equals cuda-emu's, each session run alone.
  AKV_REQUIRE_DEVICE();
  auto model = test::tiny();
  const int vocab = model->config.vocab;
  auto dev = poisoned(make_cuda_backend(model)), emu = poisoned(make_cuda_emu_backend(model));
  const auto toks = test::tokens(1200, 5, vocab);
  {
    KVCache a(model->config), b(model->config);
    std::vector<float> la(100 * static_cast<size_t>(vocab)), lb(la.size());
    dev->forward(a, std::span<const Token>(toks).first(100), la);
    emu->forward(b, std::span<const Token>(toks).first(100), lb);
    la.resize(vocab), lb.resize(vocab);
    for (size_t i = 100; i + 2 <= toks.size();) {
      // Mostly one token; now and then two with only the last row's logits: another shape.
      const size_t m = i % 7 == 3 ? 2 : 1;
      const uint32_t last = static_cast<uint32_t>(m - 1);
      const std::span<const Token> step = std::span<const Token>(toks).subspan(i, m);
      dev->forward_rows(a, step, RowList(&last, 1), la);
      emu->forward_rows(b, step, RowList(&last, 1), lb);
      ASSERT_EQ(std::memcmp(la.data(), lb.data(), la.size() * sizeof(float)), 0) << "token " << i;
      i += m;
    }
    EXPECT_EQ(cache_sha256(a), cache_sha256(b));
  }
  {
    std::vector<KVCache> dc, ec;
    dc.reserve(3), ec.reserve(3);  // the caches never move: each keeps its mirror
    const size_t hist[3] = {0, 40, 300};
    for (size_t h : hist) {
      dc.emplace_back(model->config), ec.emplace_back(model->config);
      std::vector<float> lg(std::max<size_t>(h, 1) * vocab);
      if (h == 0) continue;
      dev->forward(dc.back(), std::span<const Token>(toks).first(h), lg);
      emu->forward(ec.back(), std::span<const Token>(toks).first(h), lg);
    }
    for (int step = 0; step < 40; ++step) {
      std::vector<BatchItem> items;
      std::vector<std::vector<float>> dl(3), el(3);
      for (size_t s = 0; s < 3; ++s) {
        const size_t m = (step == 20 && s == 1) ? 2 : 1, at = (hist[s] + step * 3 + s) % (toks.size() - 2);
        dl[s].assign(m * vocab, 0.0f), el[s].assign(m * vocab, 1.0f);
        items.push_back({&dc[s], std::span<const Token>(toks).subspan(at, m), dl[s], {}});
        emu->forward(ec[s], std::span<const Token>(toks).subspan(at, m), el[s]);  // alone
      }
      dev->forward_batch(items);
      for (size_t s = 0; s < 3; ++s) {
        ASSERT_EQ(std::memcmp(dl[s].data(), el[s].data(), dl[s].size() * sizeof(float)), 0) << "step " << step << " session " << s;
        ASSERT_EQ(cache_sha256(dc[s]), cache_sha256(ec[s])) << "step " << step << " session " << s;
      }
    }
  }
}

// G7 on the device (chunkings, decode, scratch, a call longer than one chunk on small) runs
// with every other variant in akv_tests: test_invariance.cpp, G7_*/cuda.

class G8_Mirror : public ::testing::TestWithParam<std::string> {};

TEST_P(G8_Mirror, EvictEqualsNeverThroughSession) {
  AKV_REQUIRE_DEVICE();
  // Both sessions on one device backend: its host mirror serves two caches in turn.
  const auto spans = test::spans_of(GetParam());
  for (size_t victim : {size_t{1}, spans.size() / 2, spans.size() - 1})
    test::expect_passed(check::evict_equals_never(check::variant("cuda"), test::tiny(), spans, {victim},
                                                  GetParam() + " span " + std::to_string(victim), false));
}

INSTANTIATE_TEST_SUITE_P(Bundled, G8_Mirror, ::testing::ValuesIn(test::bundled_conversations()),
                         [](const auto& i) { return i.param.substr(0, 4); });

TEST(G10_DeviceEqualsEmu, EvictionThroughSession) {
  AKV_REQUIRE_DEVICE();
  const auto spans = test::spans_of("ja03_clean_banking_march_spending.json");
  auto dev = poisoned(make_cuda_backend(test::tiny())), emu = poisoned(make_cuda_emu_backend(test::tiny()));
  Session a(*dev), b(*emu);
  test::build(a, spans);
  test::build(b, spans);
  a.evict(1);
  b.evict(1);
  EXPECT_EQ(cache_sha256(a.cache()), cache_sha256(b.cache()));
  EXPECT_TRUE(compare(a.logits(), b.logits()).equal());
}

TEST(G8_MirrorCases, CopiedAndAlternatingSessionsAndForeignWrites) {
  AKV_REQUIRE_DEVICE();
  const auto spans = test::spans_of("ja01_banking_bill_important_instructions.json");
  const int vocab = test::tiny()->config.vocab;
  auto dev = poisoned(make_cuda_backend(test::tiny()));
  auto emu = poisoned(make_cuda_emu_backend(test::tiny()));
  Session a(*dev), b(*emu);
  test::build(a, spans, {1});
  test::build(b, spans, {1});
  Session copy = a;  // another cache object: uploaded whole before use
  Session other(*dev);
  other.append(0, spans[0]);  // interleaved work on the same backend
  const auto l1 = copy.append(50, spans[1]), l2 = a.append(50, spans[1]), l3 = b.append(50, spans[1]);
  EXPECT_TRUE(compare(l1, l3).equal());
  EXPECT_TRUE(compare(l2, l3).equal());
  // A cache grown by another backend, then continued on the device; and truncated by hand.
  KVCache mixed(test::tiny()->config), pure(test::tiny()->config);
  const auto toks = test::tokens(200, 4, vocab);
  std::vector<float> lg(200 * static_cast<size_t>(vocab));
  const auto first = [&](size_t n) { return std::span<float>(lg).first(n * vocab); };
  emu->forward(mixed, std::span<const Token>(toks).first(150), first(150));
  dev->forward(mixed, std::span<const Token>(toks).subspan(150), first(50));
  emu->forward(pure, toks, lg);
  EXPECT_EQ(cache_sha256(mixed), cache_sha256(pure));
  mixed.truncate(120);
  pure.truncate(120);
  dev->forward(mixed, std::span<const Token>(toks).subspan(120, 30), first(30));
  emu->forward(pure, std::span<const Token>(toks).subspan(120, 30), first(30));
  EXPECT_EQ(cache_sha256(mixed), cache_sha256(pure));
}

TEST(G11_DeviceVsReference, DeviceBitsAreEmuBitsWhoseOpsAreWithinBounds) {
  // The device's ops are held to the reference through cuda-emu: on these tokens the device
  // gives cuda-emu's bits (G10), and every op of every layer of cuda-emu, on the reference's
  // inputs, is within B_ref + B_opt of the reference's (spec/bounds.md B16).
  AKV_REQUIRE_DEVICE();
  for (const char* cfg : {"tiny", "small"}) {
    auto model = make_model(config_by_name(cfg), 1);
    auto emu = make_cuda_emu_backend(model), dev = poisoned(make_cuda_backend(model));
    const auto toks = test::tokens(400, 31, model->config.vocab);
    const check::Run a = run_chunked(*emu, toks, {400}), b = run_chunked(*dev, toks, {400});
    EXPECT_EQ(sha256_floats(a.logits), sha256_floats(b.logits)) << cfg;
    const check::PerOpReport r = check::per_op_check(*model, toks, check::optimized_op_tables("cuda-emu"), cfg);
    EXPECT_TRUE(r.sound()) << check::to_text(r);
    ASSERT_NE(r.worst(), nullptr);
    std::printf("[ observed ] cuda (= cuda-emu) vs reference per op, %s, 400 tokens: largest ratio %.3g\n", cfg,
                r.worst()->max_ratio);
  }
}
