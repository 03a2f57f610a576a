// The forward over a kernel table (spec/gate.md GT6, GT7, GT8): written once, it is the
// reference backend over the reference's table, cuda-emu over the emulation's, and the cpu
// backend's fused forward equals it over the cpu table; a table's evict op is held to E3.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "broken_catalog.hpp"
#include "optimized/composed/composed_backend.hpp"
#include "optimized/composed/plugin.hpp"
#include "optimized/cpu/c_kernels.hpp"
#include "optimized/cpu/cpu_backend.hpp"
#include "optimized/cuda/emu/c_kernels.hpp"
#include "optimized/cuda/emu/emu_backend.hpp"
#include "reference/c_kernels.hpp"
#include "reference/error.hpp"
#include "reference/session.hpp"
#include "verify/check/models.hpp"
#include "verify/check/run.hpp"

namespace akv {
namespace {

std::shared_ptr<const OpSet> set_of(const akv_kernels* t) { return std::make_shared<const OpSet>(t, nullptr, t->name); }

std::unique_ptr<Backend> composed(std::shared_ptr<const Model> m, std::shared_ptr<const OpSet> s) {
  auto b = make_composed_backend(std::move(m), std::move(s));
  b->set_scratch_poison(std::nanf(""));
  return b;
}

check::Run run(Backend& b, const std::vector<Token>& t, std::initializer_list<size_t> lengths) {
  return check::run_chunked(b, t, lengths);
}

// A table whose set_threads and matmul record the thread count each call ran at.
struct ThreadLog {
  int32_t current = 1;
  std::vector<int32_t> seen;  // the count at each matmul call
};
ThreadLog g_log;
int log_set_threads(void*, int32_t n) { return g_log.current = n, 0; }
void log_matmul(void* ctx, float* Y, size_t ldy, const float* X, size_t ldx, int32_t M, const float* W, const void* p,
                int32_t n, int32_t d, float* sc) {
  g_log.seen.push_back(g_log.current);
  reference_kernels()->matmul(ctx, Y, ldy, X, ldx, M, W, p, n, d, sc);
}

// GT4 mixes thread counts in one case: backends over one table (one plugin, one ctx) each
// compute at their own count, whichever was made last.
TEST(GT4_ComposedThreads, EachBackendComputesAtItsOwnThreadCount) {
  akv_kernels t{};
  t.abi_version = AKV_KERNELS_ABI_VERSION, t.name = "thread-log", t.provides = AKV_OP_MATMUL;
  t.set_threads = log_set_threads, t.matmul = log_matmul;
  const auto s = set_of(&t);
  const auto m = check::tiny_model();
  ComposedOptions one, three;
  one.threads = 1, three.threads = 3;
  auto a = make_composed_backend(m, s, one), b = make_composed_backend(m, s, three);
  const auto tok = check::tokens(5, 1, m->config.vocab);
  for (Backend* be : {a.get(), b.get(), a.get()}) {
    g_log.seen.clear();
    Session sess(*be);
    sess.append(0, tok);
    ASSERT_FALSE(g_log.seen.empty());
    const int32_t want = be == a.get() ? 1 : 3;
    EXPECT_TRUE(std::all_of(g_log.seen.begin(), g_log.seen.end(), [&](int32_t n) { return n == want; }))
        << be->name() << " ran at " << g_log.seen.front() << " threads, not " << want;
  }
}

TEST(GT7_ComposedForward, OverTheReferenceTableIsTheReferenceBackend) {
  const auto ref_set = set_of(reference_kernels());
  for (const auto& [m, n] : {std::pair{check::tiny_model(), size_t{200}}, std::pair{check::small_model(1), size_t{60}}}) {
    auto ref = make_reference_backend(m);
    ref->set_scratch_poison(std::nanf(""));
    auto comp = composed(m, ref_set);
    const auto t = check::tokens(n, 7, m->config.vocab);
    const check::Run want = run(*ref, t, {n});
    EXPECT_EQ(check::run_diff(want, run(*comp, t, {n})), "");
    EXPECT_EQ(check::run_diff(want, run(*comp, t, {37, 1, n - 38})), "");
  }
}

TEST(GT7_ComposedForward, CudaEmuIsTheComposedForwardOverTheEmuTable) {
  const auto m = check::small_model(1);
  auto emu = make_cuda_emu_backend(m);
  auto comp = composed(m, set_of(cuda::emu::emu_kernels()));
  const auto t = check::tokens(90, 3, m->config.vocab);
  const check::Run a = run(*emu, t, {90}), b = run(*comp, t, {20, 70});
  EXPECT_EQ(check::run_diff(a, b), "");
  // The control: another table's bits differ, so the equality above could have failed.
  auto ref = composed(m, set_of(reference_kernels()));
  EXPECT_NE(check::run_diff(a, run(*ref, t, {90})), "");
}

TEST(GT8_FusedEqualsComposed, CpuBackendEqualsTheComposedForwardOverItsTable) {
  const auto m = check::small_model(1);
  const auto t = check::tokens(100, 5, m->config.vocab);
  int isas = 0;
  for (cpu::Isa isa : cpu::supported_isas()) {
    cpu::CpuKernelTable table(isa, 2);
    auto comp = composed(m, std::make_shared<const OpSet>(table.table(), nullptr, "cpu"));
    auto fused = cpu::make_cpu_backend(m, {cpu::isa_name(isa), 2});
    fused->set_scratch_poison(std::nanf(""));
    const check::Run a = run(*fused, t, {100});
    EXPECT_EQ(check::run_diff(a, run(*comp, t, {100})), "") << cpu::isa_name(isa);
    EXPECT_EQ(check::run_diff(a, run(*comp, t, {17, 1, 82})), "") << cpu::isa_name(isa);
    ++isas;
  }
  EXPECT_GT(isas, 0);
}

// ---- GT6: a table's evict op

int32_t evict_at_begin(void*, const akv_cache_view*, int32_t begin, int32_t) { return begin; }
int32_t evict_below_begin(void*, const akv_cache_view*, int32_t begin, int32_t) { return begin - 1; }
int32_t evict_past_end(void*, const akv_cache_view* c, int32_t begin, int32_t end) { return c->size - (end - begin) + 1; }
std::shared_ptr<const OpSet> with_evict(int32_t (*fn)(void*, const akv_cache_view*, int32_t, int32_t), const char* name) {
  auto* t = new akv_kernels(*reference_kernels());  // lives for the process, as a loaded library's table
  t->name = name;
  t->evict = fn;
  return set_of(t);
}

// The evict op of the catalog's library `name` (plugins/broken), every other op the reference's.
std::shared_ptr<const OpSet> catalog_evict(const std::string& name) {
  return load_kernels(test::broken_kernels(name), AKV_OP_EVICT);
}

std::vector<std::vector<Token>> spans() {
  std::vector<std::vector<Token>> s;
  for (uint32_t i = 0; i < 4; ++i) s.push_back(check::tokens(20 + 7 * i, 40 + i, check::tiny_model()->config.vocab));
  return s;
}

TEST(GT6_EvictOp, ReturningBeginIsTheExactPath) {
  auto b = composed(check::tiny_model(), with_evict(evict_at_begin, "at-begin")), never = composed(check::tiny_model(), set_of(reference_kernels()));
  Session s(*b), n(*never);
  const auto sp = spans();
  for (size_t i = 0; i < sp.size(); ++i) s.append(i, sp[i]);
  for (size_t i = 0; i < sp.size(); ++i)
    if (i != 1) n.append(i, sp[i]);
  const EvictStats st = s.evict(SpanId{1});
  EXPECT_EQ(st.tokens_recomputed, sp[2].size() + sp[3].size());
  EXPECT_EQ(check::cache_diff(s.cache(), n.cache()), "");
  EXPECT_EQ(std::memcmp(s.logits().data(), n.logits().data(), s.logits().size_bytes()), 0);
}

TEST(GT6_EvictOp, KShiftInPlaceOfRecomputeIsNotExact) {
  // K-shift (spec/leakage.md L4): survivors moved down, keys re-rotated, nothing recomputed.
  auto b = composed(check::tiny_model(), catalog_evict("evict_rerotate")), never = composed(check::tiny_model(), set_of(reference_kernels()));
  Session s(*b), n(*never);
  const auto sp = spans();
  for (size_t i = 0; i < sp.size(); ++i) s.append(i, sp[i]);
  for (size_t i = 0; i < sp.size(); ++i)
    if (i != 1) n.append(i, sp[i]);
  const EvictStats st = s.evict(SpanId{1});
  EXPECT_EQ(st.tokens_recomputed, 0u);
  EXPECT_EQ(s.size(), n.size());
  EXPECT_NE(check::cache_diff(s.cache(), n.cache()), "");  // what GT4's E1 catches in a plugin
}

TEST(GT6_EvictOp, ContractBreachesAreBadKernels) {
  const auto sp = spans();
  const std::pair<std::shared_ptr<const OpSet>, std::string> breaches[] = {
      {with_evict(evict_below_begin, "breach"), "outside"},
      {with_evict(evict_past_end, "breach"), "outside"},
      {catalog_evict("evict_page_prefix"), "rewrote prefix rows"}};  // pages from begin rounded down to 16
  for (const auto& [ops, what] : breaches) {
    auto b = composed(check::tiny_model(), ops);
    Session s(*b);
    for (size_t i = 0; i < sp.size(); ++i) s.append(i, sp[i]);
    try {
      s.evict(SpanId{2});
      ADD_FAILURE() << "no error for " << what;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kBadKernels);
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("E3"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace akv
