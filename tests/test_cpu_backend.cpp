// Backend-level checks of the cpu backend that compare across variants: every ISA gives the
// same bits (K0), golden digests (K10), the end-to-end distance from the reference (K12).
// Invariance, batches, threads, scratch and eviction on every variant: test_invariance.cpp.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "bounds_support.hpp"
#include "cpu_support.hpp"
#include "harness_support.hpp"
#include "support.hpp"
#include "optimized/cpu/localise.hpp"
#include "reference/error.hpp"
#include "verify/check/per_op.hpp"
#include "verify/check/run.hpp"
#include "runtime/digest.hpp"

using namespace akv;
using namespace akv::test;

// ---- K0: every ISA the machine has gives the same bits, end to end

TEST(K0_IsaAgree, EverySupportedIsaGivesTheSameModelBits) {
  const auto t = tokens(96, 13, small()->config.vocab);
  std::vector<check::Run> runs;
  for (cpu::Isa isa : cpu::supported_isas()) {
    auto b = isa_variant(isa).make(small());
    runs.push_back(check::run_chunked(*b, t, {90, 1, 5}));
  }
  for (size_t i = 1; i < runs.size(); ++i)
    EXPECT_EQ(check::run_diff(runs[0], runs[i]), "") << cpu::isa_name(cpu::supported_isas()[i]);
  if (!cpu::isa_supported(cpu::Isa::kAvx512))
    std::cout << "[ note     ] avx512 not supported by this CPU: its agreement is NOT checked here\n";
}

TEST(K0_IsaAgree, UnsupportedOrUnknownIsaIsAnError) {
  EXPECT_THROW(cpu::parse_isa("sse9"), Error);
  for (cpu::Isa isa : cpu::all_isas())
    if (!cpu::isa_supported(isa)) {
      EXPECT_THROW(isa_variant(isa).make(tiny()), Error);
    }
  EXPECT_EQ(cpu::resolve_isa("portable"), cpu::Isa::kPortable);
}

// ---- K10: golden digests

namespace {
struct GoldenCase {
  std::string name;
  std::string cache, logits;
};

std::vector<GoldenCase> golden_cases(Backend& tiny_b, Backend& small_b) {
  std::vector<GoldenCase> out;
  {
    Session s(tiny_b);
    build(s, spans_of("ja01_banking_bill_important_instructions.json"));
    s.evict(2);
    out.push_back({"tiny_ja01_evict2", cache_sha256(s.cache()), sha256_floats(s.logits())});
  }
  {
    const auto t = tokens(300, 9, small_b.model().config.vocab);
    const check::Run r = check::run_chunked(small_b, t, {300});
    out.push_back({"small_300_tokens", cache_sha256(r.cache), sha256_floats(r.logits)});
  }
  return out;
}
}  // namespace

using K10_Golden = VariantTest;
TEST_P(K10_Golden, DigestsMatchTheCheckedInGoldens) {
  const std::string path = source_dir() + "/tests/golden/cpu.json";
  nlohmann::json j;
  if (std::ifstream in(path); in) in >> j;
  auto bt = variant().make(tiny()), bs = variant().make(small());
  const auto cases = golden_cases(*bt, *bs);
  const std::string& isa = GetParam().isa;
  if (std::getenv("AKV_UPDATE_GOLDENS")) {
    for (const auto& c : cases) j["cases"][c.name][isa] = {{"cache_sha256", c.cache}, {"logits_sha256", c.logits}};
    std::ofstream(path) << j.dump(2) << "\n";
    GTEST_SKIP() << "AKV_UPDATE_GOLDENS: wrote " << path << " for " << isa;
  }
  bool changed = false;
  for (const auto& c : cases) {
    ASSERT_TRUE(j["cases"][c.name].contains(isa)) << "no golden for " << c.name << " / " << isa << " in " << path;
    EXPECT_EQ(j["cases"][c.name][isa]["cache_sha256"], c.cache) << c.name << " / " << isa << ": numerics changed";
    EXPECT_EQ(j["cases"][c.name][isa]["logits_sha256"], c.logits) << c.name << " / " << isa << ": numerics changed";
    changed = changed || j["cases"][c.name][isa]["cache_sha256"] != c.cache || j["cases"][c.name][isa]["logits_sha256"] != c.logits;
  }
  if (changed) {  // K14: the same run names the first op and ISA that differ
    std::vector<Token> conv;
    for (const auto& s : spans_of("ja01_banking_bill_important_instructions.json")) conv.insert(conv.end(), s.begin(), s.end());
    ADD_FAILURE() << "tiny, ja01: " << cpu::describe(cpu::localise(tiny(), conv, cpu::supported_tables()));
    ADD_FAILURE() << "small, 300 tokens: "
                  << cpu::describe(cpu::localise(small(), tokens(300, 9, small()->config.vocab), cpu::supported_tables()));
  }
}

// ---- K12: every op of every layer against the reference, on the small model's own tensors
// (spec/bounds.md B16; K12_WithinEnclosure holds the logits end to end on tiny, where B11 is finite)

using K12_EndToEnd = VariantTest;
TEST_P(K12_EndToEnd, EveryOpOfEveryLayerWithinBoundsOfTheReference) {
  std::vector<check::OpTable> table;
  for (check::OpTable& t : check::optimized_op_tables("cpu"))
    if (t.label == GetParam().isa) table.push_back(std::move(t));
  ASSERT_EQ(table.size(), 1u) << GetParam().isa;
  const auto t = tokens(128, 12, small()->config.vocab);
  const check::PerOpReport r = check::per_op_check(*small(), t, table, "small");
  EXPECT_TRUE(r.sound()) << check::to_text(r);
  ASSERT_EQ(r.tables.size(), 1u);
  const check::OpStat* w = r.worst();
  ASSERT_NE(w, nullptr);
  EXPECT_GT(w->max_ratio, 0.0) << "a different order should show somewhere";
  std::cout << "[ observed ] " << GetParam().isa << " small model, 128 tokens: largest |cpu - reference| / (B_ref + B_opt) = "
            << w->max_ratio << " (" << w->op << ", layer " << w->layer << ")\n";
  RecordProperty("max_ratio", std::to_string(w->max_ratio));
}

TEST(K12_WithinEnclosure, TinyConversationLogitsWithinB11OfExact) {
  // End to end: the cpu backend's logits lie within the B11 enclosure of the exact logits.
  const bounds::BackendBound b = enclosure_check("cpu", 20);
  std::cout << "[ observed ] cpu, tiny, 20 tokens: max |cpu - exact| = " << b.max_error
            << ", largest fraction of the B11 bound = " << b.max_fraction << "\n";
  EXPECT_EQ(b.violations, 0u);
  EXPECT_LE(b.max_fraction, 1.0);
  EXPECT_GT(b.max_error, 0.0);
}

INSTANTIATE_TEST_SUITE_P(, K10_Golden, ::testing::ValuesIn(cpu_isa_variants()), variant_name);
INSTANTIATE_TEST_SUITE_P(, K12_EndToEnd, ::testing::ValuesIn(cpu_isa_variants()), variant_name);
