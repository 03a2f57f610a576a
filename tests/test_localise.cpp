// K14: where a golden digest fails, the same run names the first op and ISA that differ
// (optimized/cpu/localise.hpp). Mutant tables (one op defective) show the message names the op.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "cpu_support.hpp"
#include "optimized/cpu/localise.hpp"
#include "reference/error.hpp"
#include "support.hpp"

using namespace akv;
using namespace akv::test;

namespace {

// The RoPE with its second product contracted, as -ffp-contract=fast would: fma(x0, s, x1*c).
void contracted_rope(float* x, int n_heads, int head_dim, const float* cos, const float* sin) {
  const int half = head_dim / 2;
  for (int h = 0; h < n_heads; ++h) {
    float* v = x + static_cast<size_t>(h) * head_dim;
    for (int i = 0; i < half; ++i) {
      const float x0 = v[i], x1 = v[i + half];
      v[i] = x0 * cos[i] - x1 * sin[i];
      v[i + half] = std::fma(x0, sin[i], x1 * cos[i]);
    }
  }
}

// SwiGLU one ulp off in its first output.
void nudged_swiglu(float* out, const float* gate, const float* up, int n) {
  cpu::kernels_portable().swiglu(out, gate, up, n);
  out[0] = std::nextafter(out[0], INFINITY);
}

cpu::Kernels with_rope(cpu::Kernels k) {
  k.rope = &contracted_rope;
  return k;
}
cpu::Kernels with_swiglu(cpu::Kernels k) {
  k.swiglu = &nudged_swiglu;
  return k;
}

int steps_of(const Model& m) { return m.config.n_layers * 11 + 2; }

}  // namespace

TEST(K14_GoldenLocalisation, EverySupportedIsaAgreesWithPortableOnEveryOpStep) {
  const auto tables = cpu::supported_tables();
  ASSERT_FALSE(tables.empty()) << "avx512_simde runs everywhere: there is always a table to compare";
  const auto loc = cpu::localise(small(), tokens(130, 21, small()->config.vocab), tables);
  EXPECT_EQ(loc.steps, static_cast<size_t>(steps_of(*small())));
  EXPECT_TRUE(loc.found.empty()) << cpu::describe(loc);
  EXPECT_NE(cpu::describe(loc).find("agree with portable"), std::string::npos) << cpu::describe(loc);
}

TEST(K14_GoldenLocalisation, AContractedRopeIsNamedWithItsLayerAndTable) {
  static const cpu::Kernels mutant = with_rope(cpu::kernels_portable());
  const auto loc = cpu::localise(tiny(), tokens(40, 3, tiny()->config.vocab),
                                 {{"avx2", &cpu::kernels_portable()}, {"portable+contracted-rope", &mutant}});
  ASSERT_EQ(loc.found.size(), 1u) << cpu::describe(loc);
  const cpu::Divergence& d = loc.found[0];
  EXPECT_EQ(d.table, "portable+contracted-rope");
  EXPECT_EQ(d.op, "rope (q, k)");
  EXPECT_EQ(d.layer, 0);
  EXPECT_EQ(d.step, 2) << "layer 0: RMSNorm, the QKV matmul, then RoPE";
  EXPECT_NE(std::memcmp(&d.got, &d.want, 4), 0);
  const std::string msg = cpu::describe(loc);
  EXPECT_NE(msg.find("first op that differs: rope (q, k) in layer 0 on portable+contracted-rope"), std::string::npos) << msg;
  std::cout << "[ observed ] " << msg << "\n";
}

TEST(K14_GoldenLocalisation, AOneUlpSwigluIsNamedNotTheOpsAfterIt) {
  static const cpu::Kernels mutant = with_swiglu(cpu::kernels_portable());
  const auto loc = cpu::localise(small(), tokens(20, 4, small()->config.vocab), {{"swiglu-mutant", &mutant}});
  ASSERT_EQ(loc.found.size(), 1u) << cpu::describe(loc);
  EXPECT_EQ(loc.found[0].op, "swiglu");
  EXPECT_EQ(loc.found[0].layer, 0);
  EXPECT_EQ(loc.found[0].row, 0);
  EXPECT_EQ(loc.found[0].index, 0);
  EXPECT_NE(cpu::describe(loc).find("swiglu in layer 0 on swiglu-mutant"), std::string::npos) << cpu::describe(loc);
}

TEST(K14_GoldenLocalisation, BadTokensAreAnError) {
  EXPECT_THROW(cpu::localise(tiny(), std::vector<Token>{}, cpu::supported_tables()), Error);
  EXPECT_THROW(cpu::localise(tiny(), std::vector<Token>{tiny()->config.vocab}, cpu::supported_tables()), Error);
  EXPECT_NE(cpu::describe({}).find("nothing checked"), std::string::npos);
}
