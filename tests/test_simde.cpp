// K13: the AVX-512 kernel source runs everywhere as the avx512_simde ISA (SIMDe, no native
// AVX-512). The ISA-agreement (K0_IsaAgree) and golden (K10_Golden) suites pick it up from
// cpu::all_isas(); this file checks what only it needs: no native instruction in its object,
// fused FMAs, and that it catches a contracted FMA in the AVX-512 RoPE on any x86-64.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>

#include "cpu_support.hpp"
#include "optimized/cpu/cpu_backend.hpp"
#include "optimized/cpu/kernels.hpp"
#include "optimized/cpu/localise.hpp"
#include "reference/exp.hpp"
#include "support.hpp"

namespace akv::cpu {
// kernels_avx512.cpp with AKV_SIMDE and AKV_MUTANT_CONTRACT_ROPE: its RoPE computes
// x0*s + x1*c as fma(x0, s, x1*c). Linked into akv_tests only (optimized/cpu/CMakeLists.txt).
const Kernels& kernels_avx512_simde_mutant_rope();
}  // namespace akv::cpu

using namespace akv;
using namespace akv::test;

namespace {

std::string disassembly(const std::string& object) {
  std::string out;
  FILE* p = popen(("objdump -d --no-show-raw-insn '" + object + "' 2>&1").c_str(), "r");
  if (!p) return out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  EXPECT_EQ(pclose(p), 0) << "objdump failed on " << object << ": " << out.substr(0, 500);
  return out;
}

// Logits of 300 fixed tokens on the small model through table k (the K10 small case).
std::vector<float> logits_with(const cpu::Kernels& k, std::string* cache_digest = nullptr) {
  cpu::CpuOptions o;
  o.kernels = &k;
  cpu::CpuBackend b(small(), o);
  b.set_scratch_poison(std::numeric_limits<float>::quiet_NaN());
  const auto t = tokens(300, 9, small()->config.vocab);
  KVCache cache(small()->config);
  std::vector<float> logits(t.size() * small()->config.vocab);
  b.forward(cache, t, logits);
  if (cache_digest) *cache_digest = cache_sha256(cache);
  return logits;
}

}  // namespace

TEST(K13_SimdeHasNoNativeAvx, ObjectsHoldNoAvxAvx512OrFmaInstruction) {
  // AKV_SIMDE_OBJECTS: the object files of akv_cpu_simde and akv_cpu_simde_mutant_rope, '|' apart.
  std::string objects = AKV_SIMDE_OBJECTS;
  int checked = 0;
  for (size_t at = 0; at <= objects.size();) {
    const size_t end = std::min(objects.find('|', at), objects.size());
    const std::string obj = objects.substr(at, end - at);
    at = end + 1;
    if (obj.empty()) continue;
    const std::string d = disassembly(obj);
    ASSERT_NE(d.find("kernels_avx512_simde"), std::string::npos) << obj << " does not define the simde table";
    size_t insns = 0;
    for (char ch : d) insns += ch == '\n';
    EXPECT_GT(insns, 10000u) << obj << ": too little code to be the kernels";
    std::smatch m;
    // zmm/ymm registers, AVX-512 mask registers, any VEX/EVEX-encoded vector instruction.
    const std::regex native(R"(%zmm|%ymm|%k[0-7]\b|\bv(fmadd|fnmadd|mul|add|sub|div|perm|shuf|broadcast|mov)\w*)");
    EXPECT_FALSE(std::regex_search(d, m, native)) << obj << " uses " << m.str() << ": native code in the emulated ISA";
    ++checked;
  }
  EXPECT_EQ(checked, 2) << "expected the simde object and its mutant in '" << objects << "'";
}

TEST(K13_SimdeRunsEverywhere, SupportedOnEveryX86AndNeverChosenByAuto) {
  EXPECT_TRUE(cpu::isa_supported(cpu::Isa::kAvx512Simde));
  EXPECT_EQ(cpu::parse_isa("avx512_simde"), cpu::Isa::kAvx512Simde);
  EXPECT_EQ(cpu::kernels_for(cpu::Isa::kAvx512Simde).isa, cpu::Isa::kAvx512Simde);
  EXPECT_NE(cpu::resolve_isa("auto"), cpu::Isa::kAvx512Simde) << "auto must pick a native path";
}

TEST(K13_SimdeFma, EveryMultiplyAddRoundsOnce) {
  // x0*w0 + x1*w1 with x0*w0 = -1 and x1*w1 = (1 + 2^-12)^2 = 1 + 2^-11 + 2^-24: one FMA chain
  // (K1) gives 2^-11 + 2^-24; SIMDe 0.7.4's own portable fmadd (a*b then +c) gives 2^-11.
  const float a = 1.0f + std::ldexp(1.0f, -12);
  const std::vector<float> W0{-1.0f, a};  // output 0: w = (-1, a)
  std::vector<float> x{1.0f, a};
  const cpu::PackedMatrix W = cpu::pack_rows({&W0}, 2);
  float y = -7.0f;
  cpu::kernels_for(cpu::Isa::kAvx512Simde).matmul(x.data(), 2, 1, W, 0, 1, &y, 1);
  const float fused = std::fma(a, a, -1.0f), unfused = a * a - 1.0f;
  ASSERT_NE(fused, unfused);
  EXPECT_EQ(std::memcmp(&y, &fused, 4), 0) << "avx512_simde matmul gave " << y << ", fused " << fused << ", unfused " << unfused;
  // exp16's two fnmadds: the vector exp must equal akv::exp where range reduction needs them fused.
  std::vector<float> in(4096), out(4096);
  for (size_t i = 0; i < in.size(); ++i) in[i] = -100.0f + 190.0f * static_cast<float>(i) / in.size();
  cpu::kernels_for(cpu::Isa::kAvx512Simde).exp(out.data(), in.data(), static_cast<int>(in.size()));
  for (size_t i = 0; i < in.size(); ++i) {
    const float s = akv::exp(in[i]);
    ASSERT_EQ(std::memcmp(&s, &out[i], 4), 0) << "exp(" << in[i] << ")";
  }
}

TEST(K13_SimdeTeeth, AContractedFmaInTheAvx512RopeIsCaughtWithoutNativeAvx512) {
  // Runs whether or not this CPU has AVX-512: the mutant is the emulated build.
  const cpu::Kernels& mutant = cpu::kernels_avx512_simde_mutant_rope();
  // 1. The kernel: the mutant's RoPE differs from portable's on random inputs, the rest agrees.
  const int heads = 4, hd = 64;
  auto x = randu(static_cast<size_t>(heads) * hd, 5), y = x;
  const auto cs = randu(hd / 2, 6), sn = randu(hd / 2, 7);
  cpu::kernels_portable().rope(x.data(), heads, hd, cs.data(), sn.data());
  mutant.rope(y.data(), heads, hd, cs.data(), sn.data());
  EXPECT_FALSE(same_bits(x, y)) << "the mutant's RoPE gives portable's bits: the mutant is not live";
  // 2. End to end: the golden digests of the small case (K10) catch it.
  std::string cache;
  const auto logits = logits_with(mutant, &cache);
  nlohmann::json j;
  std::ifstream(source_dir() + "/tests/golden/cpu.json") >> j;
  const auto& g = j["cases"]["small_300_tokens"]["avx512_simde"];
  ASSERT_TRUE(g.contains("logits_sha256")) << "no avx512_simde golden for small_300_tokens";
  EXPECT_NE(g["cache_sha256"], cache);
  EXPECT_NE(g["logits_sha256"], sha256_floats(logits));
  std::string clean_cache;
  const auto clean = logits_with(cpu::kernels_avx512_simde(), &clean_cache);
  EXPECT_EQ(g["cache_sha256"], clean_cache) << "the unmutated avx512_simde table must match its golden";
  EXPECT_EQ(g["logits_sha256"], sha256_floats(clean));
  // 3. The localiser (K14) names the op.
  const auto loc = cpu::localise(small(), tokens(300, 9, small()->config.vocab), {{"avx512_simde+contracted-rope", &mutant}});
  ASSERT_EQ(loc.found.size(), 1u) << cpu::describe(loc);
  EXPECT_EQ(loc.found[0].op, "rope (q, k)") << cpu::describe(loc);
  EXPECT_EQ(loc.found[0].layer, 0);
  std::cout << "[ observed ] " << cpu::describe(loc) << "\n";
}
