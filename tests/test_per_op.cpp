// B16: every op of every layer on a model's own tensors, each optimized op table within
// B_ref + B_opt of the reference's op on the same inputs (verify/check/per_op.hpp).
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "optimized/composed/plugin.hpp"
#include "optimized/cpu/isa.hpp"
#include "reference/backend.hpp"
#include "reference/error.hpp"
#include "broken_catalog.hpp"
#include "cli_support.hpp"
#include "support.hpp"
#include "verify/bounds/op_bounds.hpp"
#include "verify/check/models.hpp"
#include "verify/check/per_op.hpp"
#include "verify/check/run.hpp"
#include "runtime/digest.hpp"

using namespace akv;

namespace {

// The reference backend's logits of every position, hashed as per_op_check hashes its trace.
std::string reference_logits_sha256(const std::shared_ptr<const Model>& m, const std::vector<Token>& toks) {
  auto ref = make_reference_backend(m);
  return sha256_floats(check::run_chunked(*ref, toks, {toks.size()}).logits);
}

// Each table ran every op of every layer, and something differed from the reference (it is
// not the reference compared with itself).
void expect_every_op_compared(const check::PerOpReport& r, const Config& c) {
  const size_t per_table = static_cast<size_t>(c.n_layers) * 15 + 2;
  EXPECT_EQ(r.stats.size(), r.tables.size() * per_table);
  double largest = 0;
  for (const check::OpStat& s : r.stats) {
    EXPECT_GT(s.elements, 0u) << s.table << " " << s.op << " layer " << s.layer;
    if (!s.bitwise) largest = std::max(largest, s.max_ratio);
  }
  EXPECT_GT(largest, 0.0) << "no table differed from the reference anywhere";
}

check::OpTable table_named(const std::string& label) {
  for (check::OpTable& t : check::optimized_op_tables())
    if (t.label == label) return t;
  ADD_FAILURE() << "no op table " << label;
  return {};
}

}  // namespace

TEST(B16_PerOp, EveryTableEveryOpOfEveryLayerWithinItsBoundOnSmall) {
  const auto m = check::small_model();
  const auto toks = check::tokens(96, 5, m->config.vocab);
  const check::PerOpReport r = check::per_op_check(*m, toks, check::optimized_op_tables(), "small");
  EXPECT_TRUE(r.sound()) << check::to_text(r);
  EXPECT_EQ(r.over(), 0u);
  EXPECT_EQ(r.vacuous(), 0u);
  ASSERT_FALSE(r.tables.empty());
  EXPECT_NE(std::find(r.tables.begin(), r.tables.end(), "cuda_emu"), r.tables.end());
  expect_every_op_compared(r, m->config);
  // The trace is the reference: its logits are the reference backend's, bit for bit.
  EXPECT_EQ(r.logits_sha256, reference_logits_sha256(m, toks));
  const nlohmann::json j = check::to_json(r);
  EXPECT_EQ(j["verdict"], "SOUND");
  EXPECT_EQ(j["ops"].size(), r.stats.size());
}

TEST(B16_PerOp, FromAPositionAfterAPrefixRunByTheReference) {
  // Positions 30 .. 39 checked, 0 .. 29 run by the reference alone: the checked rows' logits
  // are the reference backend's rows 30 .. 39, and every reported row is a checked position.
  const auto m = check::small_model();
  const auto toks = check::tokens(40, 8, m->config.vocab);
  const check::PerOpReport r = check::per_op_check(*m, toks, check::optimized_op_tables("cuda-emu"), "small", 30);
  EXPECT_TRUE(r.sound()) << check::to_text(r);
  EXPECT_EQ(r.from, 30u);
  for (const check::OpStat& s : r.stats) {
    EXPECT_GE(s.worst_row, 30) << s.op;
    EXPECT_LT(s.worst_row, 40) << s.op;
  }
  auto ref = make_reference_backend(m);
  const std::vector<float> all = check::run_chunked(*ref, toks, {toks.size()}).logits;
  const size_t vocab = static_cast<size_t>(m->config.vocab);
  EXPECT_EQ(r.logits_sha256, sha256_floats(std::span<const float>(all).subspan(30 * vocab)));
  EXPECT_THROW(check::per_op_check(*m, toks, check::optimized_op_tables("cuda-emu"), "small", 40), Error);
}

TEST(B16_PerOp, AMatmulOffByMoreThanItsBoundIsNamed) {
  // The portable table with one output of one matmul moved by 5 B1 (so at least 3 B1 from
  // the reference's, which is within 2 B1 of it): the check names the table, op, layer, row
  // and column; the other ops stay within their bounds.
  check::OpTable t = table_named("portable");
  const auto inner = t.matmul;
  t.label = "mutant";
  t.matmul = [inner](float* Y, const float* X, const float* W, int M, int n, int d) {
    inner(Y, X, W, M, n, d);
    if (d == 688 && M > 7)  // W_1 / W_3 of small: ffn 688
      Y[7 * d + 100] += static_cast<float>(5 * bounds::dot_bound(X + 7 * n, 1, W + 100 * n, 1, n));
  };
  const auto m = check::small_model();
  const check::PerOpReport r = check::per_op_check(*m, check::tokens(16, 5, m->config.vocab), {t}, "small");
  EXPECT_FALSE(r.sound());
  EXPECT_EQ(r.over(), 2u * static_cast<size_t>(m->config.n_layers)) << check::to_text(r);  // w1, w3 per layer
  const std::string text = check::to_text(r);
  EXPECT_NE(text.find("VIOLATED: mutant w1 layer 0 row 7 col 100"), std::string::npos) << text;
  for (const check::OpStat& s : r.stats)
    if (s.op != "w1" && s.op != "w3") { EXPECT_EQ(s.over, 0u) << s.op; }
}

TEST(B16_PerOp, AnAttentionOrRmsnormOffByMoreThanItsBoundIsNamed) {
  const auto m = check::small_model();
  const auto toks = check::tokens(12, 9, m->config.vocab);
  check::OpTable a = table_named("portable");
  const auto att = a.attention;
  a.label = "mutant_attention";
  a.attention = [att](float* out, const float* q, const float* k, const float* v, int M, int pos0, int H, int G, int hd) {
    att(out, q, k, v, M, pos0, H, G, hd);
    out[static_cast<size_t>(M - 1) * H * hd + 3] += 1e-3f;
  };
  check::OpTable n = table_named("portable");
  const auto rms = n.rmsnorm;
  n.label = "mutant_rmsnorm";
  n.rmsnorm = [rms](float* out, const float* x, const float* w, int M, int cols, float eps) {
    rms(out, x, w, M, cols, eps);
    out[0] = std::nextafter(std::nextafter(out[0], 1e30f), 1e30f) * (1.0f + 0x1p-10f);
  };
  const check::PerOpReport r = check::per_op_check(*m, toks, {a, n}, "small");
  EXPECT_FALSE(r.sound());
  for (const check::OpStat& s : r.stats) {
    const bool hit = (s.table == "mutant_attention" && s.op == "attention") ||
                     (s.table == "mutant_rmsnorm" && (s.op == "attn_norm" || s.op == "ffn_norm" || s.op == "final_norm"));
    EXPECT_EQ(s.over > 0, hit) << s.table << " " << s.op << " layer " << s.layer << ": " << s.over;
    if (hit) { EXPECT_GT(s.max_ratio, 1.0); }
  }
}

TEST(B16_PerOp, AKernelLibraryThroughTheCAbi) {
  // The catalog's sound control passes; its FMA-in-RoPE defect is caught on the bitwise op.
  const auto m = check::small_model();
  const auto toks = check::tokens(24, 3, m->config.vocab);
  const check::PerOpReport ok =
      check::per_op_check(*m, toks, {check::plugin_op_table(load_kernels(test::sound_kernels()))}, "small");
  EXPECT_TRUE(ok.sound()) << check::to_text(ok);
  ASSERT_EQ(ok.tables.size(), 1u);
  EXPECT_EQ(ok.tables[0].rfind("plugin_", 0), 0u) << ok.tables[0];
  const check::PerOpReport bad =
      check::per_op_check(*m, toks, {check::plugin_op_table(load_kernels(test::broken_kernels("fma_in_rope")))}, "small");
  EXPECT_FALSE(bad.sound());
  for (const check::OpStat& s : bad.stats)
    EXPECT_EQ(s.over > 0, s.op == "rope_q" || s.op == "rope_k") << s.op << " layer " << s.layer;
  EXPECT_NE(check::to_text(bad).find("(bits must equal)"), std::string::npos) << check::to_text(bad);
}

TEST(B16_PerOp, NothingComparedIsNotSoundAndBadTokensAreRefused) {
  const auto m = check::tiny_model();
  const auto toks = check::tokens(8, 1, m->config.vocab);
  const check::PerOpReport none = check::per_op_check(*m, toks, {}, "tiny");
  EXPECT_FALSE(none.sound());
  EXPECT_NE(check::to_text(none).find("VACUOUS: nothing was compared"), std::string::npos) << check::to_text(none);
  EXPECT_EQ(check::to_json(none)["verdict"], "VACUOUS");  // the text's verdict, not VIOLATED
  check::OpTable missing;
  missing.label = "avx9";
  missing.unavailable = "this CPU lacks avx9";
  const check::PerOpReport skipped = check::per_op_check(*m, toks, {missing}, "tiny");
  EXPECT_FALSE(skipped.sound());
  ASSERT_EQ(skipped.unavailable.size(), 1u);
  EXPECT_EQ(skipped.unavailable[0], "avx9: this CPU lacks avx9");
  const auto tables = check::optimized_op_tables();
  EXPECT_THROW(check::per_op_check(*m, std::vector<Token>{}, tables, "tiny"), Error);
  EXPECT_THROW(check::per_op_check(*m, std::vector<Token>{1, m->config.vocab}, tables, "tiny"), Error);
  EXPECT_THROW(check::per_op_check(*m, std::vector<Token>(static_cast<size_t>(m->config.max_ctx) + 1, 1), tables, "tiny"),
               Error);
}

TEST(B16_PerOp, TheCliChecksAnyModelAndRefusesPerOpOptionsWithoutIt) {
  const std::string f = test::example("ad01_banking_ut0_gpt4omini.json");
  const test::CliRun r = test::run_akv({"bounds", f, "--per-op", "--model", "tiny", "--max-tokens", "40", "--json"});
  ASSERT_EQ(r.code, 0) << r.err << r.out.substr(0, 2000);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_TRUE(j["sound"].get<bool>());
  EXPECT_EQ(j["tokens"], 40);
  const test::CliRun text = test::run_akv({"bounds", f, "--per-op", "--model", "tiny", "--max-tokens", "8", "--tables", "cuda-emu"});
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_NE(text.out.find("SOUND: every op of every layer within its bound"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("cuda_emu"), std::string::npos) << text.out;
  const test::CliRun broken =
      test::run_akv({"bounds", f, "--per-op", "--model", "tiny", "--max-tokens", "8", "--kernels", test::broken_kernels("fma_in_rope")});
  EXPECT_EQ(broken.code, 1) << broken.err;
  EXPECT_NE(broken.out.find("VIOLATED: plugin_"), std::string::npos) << broken.out;
  const test::CliRun from = test::run_akv({"bounds", f, "--per-op", "--model", "tiny", "--max-tokens", "30", "--from", "24", "--json"});
  ASSERT_EQ(from.code, 0) << from.err;
  EXPECT_EQ(nlohmann::json::parse(from.out)["from"], 24);
  EXPECT_EQ(test::run_akv({"bounds", f, "--from", "3"}).code, 2);
  const test::CliRun no_flag = test::run_akv({"bounds", f, "--tables", "cpu"});
  EXPECT_EQ(no_flag.code, 2);
  EXPECT_NE(no_flag.err.find("--per-op"), std::string::npos) << no_flag.err;
  const test::CliRun real_without = test::run_akv({"bounds", f, "--model", "smollm2"});
  EXPECT_EQ(real_without.code, 2);
  EXPECT_NE(real_without.err.find("--per-op and --a-posteriori run on any model"), std::string::npos) << real_without.err;
}

TEST(B16_PerOp, TypedCachesStoreTheReferencesBytesWithinB18AndAttentionReadsThem) {
  // spec/state.md S5-S8 in the per-op check: each table's stored K/V bytes are the reference's
  // (S6, S7), each stored value within B18 of the float32 value it rounds, attention on the
  // stored rows within B14; the trace is the typed reference backend, bit for bit.
  const auto m = check::small_model();
  const auto toks = check::tokens(40, 8, m->config.vocab);
  // The fastest native table (its own encoder, K16) and cuda-emu (the reference's, through the cache).
  const std::vector<check::OpTable> tables = {table_named(cpu::isa_name(cpu::resolve_isa("auto"))), table_named("cuda_emu")};
  for (KvType t : {KvType::kF16, KvType::kQ8_0}) {
    const check::PerOpReport r = check::per_op_check(*m, toks, tables, "small", 20, t);
    EXPECT_TRUE(r.sound()) << check::to_text(r);
    EXPECT_EQ(r.kv_type, kv_type_name(t));
    EXPECT_EQ(r.stats.size(), r.tables.size() * (static_cast<size_t>(m->config.n_layers) * 19 + 2));
    double round_ratio = 0;
    for (const check::OpStat& s : r.stats)
      if (s.clause == "B18") round_ratio = std::max(round_ratio, s.max_ratio);
    EXPECT_GT(round_ratio, 0.0) << "the rounding was compared with nothing";
    auto ref = make_reference_backend(m);
    const std::vector<float> all = check::run_chunked(*ref, toks, {20, 20}, t).logits;
    EXPECT_EQ(r.logits_sha256, sha256_floats(std::vector<float>(all.begin() + 20 * m->config.vocab, all.end())));
  }
  // A table whose encoder rounds otherwise (toward zero) is named at kv_store.
  check::OpTable off = table_named(cpu::isa_name(cpu::resolve_isa("auto")));
  off.kv_encode = [](KvType t, const float* x, int n, uint8_t* out) {
    std::vector<float> y(x, x + n);
    for (float& v : y) v = std::nextafter(v, 0.0f) == 0.0f ? v : std::nextafter(v, 0.0f) * (1 - 0x1p-9f);
    kv_encode_row(t, y.data(), n, out);
  };
  const check::PerOpReport bad = check::per_op_check(*m, toks, {off}, "small", 30, KvType::kF16);
  EXPECT_FALSE(bad.sound());
  EXPECT_NE(check::to_text(bad).find("kv_store_k"), std::string::npos) << check::to_text(bad);
}
