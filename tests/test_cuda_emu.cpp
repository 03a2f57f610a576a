// The "cuda-emu" backend: the CUDA backend's forward pass on the CPU (spec/kernels-cuda.md
// G9, G11): listed in the registry, within the B11 enclosure, and its observed distance to the
// reference, reported. Its invariance and eviction checks: test_invariance.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>

#include <nlohmann/json.hpp>

#include "optimized/cuda/arith/gemm.hpp"
#include "optimized/cuda/emu/emu_backend.hpp"
#include "reference/error.hpp"
#include "bounds_support.hpp"
#include "cuda_emu_support.hpp"
#include "support.hpp"
#include "harness_support.hpp"
#include "runtime/backends.hpp"
#include "verify/check/invariance.hpp"
#include "verify/check/variants.hpp"
#include "verify/check/per_op.hpp"
#include "verify/check/run.hpp"
#include "verify/compare.hpp"
#include "runtime/digest.hpp"

using namespace akv;

using test::emu;

// G7 (invariance) and G9's eviction through Session run on cuda-emu with every other variant:
// test_invariance.cpp (G7_Invariance, G7_BatchAndThreads, G7_ScratchPoison, G9_EvictEqualsNever).

// --- G9: the emulation is a backend like any other; E1 holds on it ------------------------------

TEST(G9_Registry, CudaEmuIsListedAndCudaOnlyWithADevice) {
  const auto names = backend_names();
  EXPECT_NE(std::find(names.begin(), names.end(), "cuda-emu"), names.end());
  auto be = make_backend("cuda-emu", test::tiny());
  EXPECT_EQ(be->name(), "cuda-emu");
  if (std::find(names.begin(), names.end(), "cuda") == names.end()) {
    EXPECT_THROW(make_backend("cuda", test::tiny()), Error);  // not built, or no device here
  }
}

// E1 and I1 through cuda-emu on every bundled conversation: tests/sweep/ (label sweep, about
// 400 CPU-seconds, outside the README's test command).

// --- G9: golden digests of cuda-emu's bits (the device's by G10) ------------------------------

// SHA-256 of the cache and logits of two fixed cases (tiny: ja01 with span 2 evicted; small:
// 300 tokens in one call), checked in at tests/golden/cuda-emu.json. Any change of the CUDA
// arithmetic fails here until the goldens are deliberately regenerated (AKV_UPDATE_GOLDENS=1),
// and the commit says which changed and why (spec/kernels-cuda.md G9).
TEST(G9_Golden, DigestsMatchTheCheckedInGoldens) {
  const std::string path = test::source_dir() + "/tests/golden/cuda-emu.json";
  struct Case { std::string name, cache, logits; };
  std::vector<Case> cases;
  {
    auto b = emu(test::tiny());
    Session s(*b);
    test::build(s, test::spans_of("ja01_banking_bill_important_instructions.json"));
    s.evict(2);
    cases.push_back({"tiny_ja01_evict2", cache_sha256(s.cache()), sha256_floats(s.logits())});
  }
  {
    auto b = emu(check::small_model());
    const auto t = test::tokens(300, 9, b->model().config.vocab);
    const check::Run r = check::run_chunked(*b, t, {300});
    cases.push_back({"small_300_tokens", cache_sha256(r.cache), sha256_floats(r.logits)});
  }
  nlohmann::json j;
  if (std::ifstream in(path); in) in >> j;
  if (std::getenv("AKV_UPDATE_GOLDENS")) {
    for (const Case& c : cases) j["cases"][c.name] = {{"cache_sha256", c.cache}, {"logits_sha256", c.logits}};
    std::ofstream(path) << j.dump(2) << "\n";
    GTEST_SKIP() << "AKV_UPDATE_GOLDENS: wrote " << path;
  }
  for (const Case& c : cases) {
    ASSERT_TRUE(j["cases"].contains(c.name)) << "no golden for " << c.name << " in " << path;
    EXPECT_EQ(j["cases"][c.name]["cache_sha256"], c.cache) << c.name << ": the CUDA numerics changed";
    EXPECT_EQ(j["cases"][c.name]["logits_sha256"], c.logits) << c.name << ": the CUDA numerics changed";
  }
}

// --- G11: end to end, within the B11 enclosure; distance to the reference, reported ---------------

TEST(G11_WithinEnclosure, TinyConversationLogitsWithinB11OfExact) {
  const bounds::BackendBound b = test::enclosure_check("cuda-emu", 20);
  std::printf("[ observed ] cuda-emu, tiny, 20 tokens: max |emu - exact| = %.3g, largest fraction of the B11 bound = %.3g\n",
              b.max_error, b.max_fraction);
  EXPECT_EQ(b.violations, 0u);
  EXPECT_LE(b.max_fraction, 1.0);
  EXPECT_GT(b.max_error, 0.0);
}

TEST(G11_VsReference, EveryOpOfEveryLayerWithinBoundsOfTheReference) {
  // The emulation is not the reference (different reduction orders: G2, G3, G5), so bits
  // differ. Each of its ops, given the reference's inputs in every layer, is within
  // B_ref + B_opt of the reference's (spec/bounds.md B16); end to end, G11_WithinEnclosure
  // holds the logits to B11 on tiny (B11 is vacuous on small).
  for (const char* cfg : {"tiny", "small"}) {
    auto model = make_model(config_by_name(cfg), 1);
    const auto toks = test::tokens(cfg == std::string("tiny") ? 400 : 100, 31, model->config.vocab);
    const check::PerOpReport r = check::per_op_check(*model, toks, check::optimized_op_tables("cuda-emu"), cfg);
    ASSERT_EQ(r.tables, std::vector<std::string>{"cuda_emu"});
    EXPECT_TRUE(r.sound()) << check::to_text(r);
    const check::OpStat* w = r.worst();
    ASSERT_NE(w, nullptr);
    EXPECT_GT(w->max_ratio, 0.0) << "cuda-emu gave the reference's bits in every op: is it running the reference?";
    std::printf("[ observed ] cuda-emu vs reference, %s, %zu tokens: largest ratio to B_ref + B_opt %.3g (%s, layer %d)\n",
                cfg, toks.size(), w->max_ratio, w->op.c_str(), w->layer);
    RecordProperty(std::string(cfg) + "_max_ratio", std::to_string(w->max_ratio));
    auto ref = make_reference_backend(model), em = emu(model);
    const check::Run a = check::run_chunked(*ref, toks, {toks.size()}), b = check::run_chunked(*em, toks, {toks.size()});
    const Diff logits = compare(a.logits, b.logits);
    EXPECT_TRUE(logits.comparable() && !logits.same_bytes) << "cuda-emu gave the reference's exact bits end to end";
  }
}
