// Synthetic shapes as spec strings (spec/model.md M12): parse, print, errors, and the
// `akv witness --model synthetic:...` re-run of a drawn shape.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "reference/error.hpp"
#include "reference/forward.hpp"
#include "reference/session.hpp"
#include "reference/synthetic_spec.hpp"
#include "tests/cli_support.hpp"
#include "runtime/backends.hpp"
#include "runtime/models.hpp"

namespace akv {
namespace {

constexpr const char* kSpec = "synthetic:hidden=40,layers=2,heads=5,kv_heads=1,head_dim=6,ffn=72,vocab=291";

TEST(M12_SyntheticShapes, ParsesEveryFieldAndPrintsCanonically) {
  const Config c = synthetic_config(kSpec);
  EXPECT_EQ(c.hidden, 40);
  EXPECT_EQ(c.n_layers, 2);
  EXPECT_EQ(c.n_heads, 5);
  EXPECT_EQ(c.n_kv_heads, 1);
  EXPECT_EQ(c.head_dim, 6);
  EXPECT_EQ(c.q_dim(), 30);  // head_dim is free of hidden (M12)
  EXPECT_EQ(c.ffn, 72);
  EXPECT_EQ(c.vocab, 291);
  const Config tiny = config_by_name("tiny");
  EXPECT_EQ(c.max_ctx, tiny.max_ctx);
  EXPECT_EQ(c.qk_gain, tiny.qk_gain);
  EXPECT_EQ(c.rms_eps, tiny.rms_eps);
  EXPECT_EQ(c.rope_theta, tiny.rope_theta);
  EXPECT_EQ(c.name, kSpec);
  EXPECT_EQ(synthetic_spec(c), kSpec);
  // Any field order; the name is the canonical order.
  EXPECT_EQ(synthetic_config("synthetic:vocab=291,ffn=72,head_dim=6,kv_heads=1,heads=5,layers=2,hidden=40").name, kSpec);
}

TEST(M12_SyntheticShapes, NamedConfigsPrintAsSpecsOfTheSameShape) {
  for (const std::string& n : config_names()) {
    const Config a = config_by_name(n), b = synthetic_config(synthetic_spec(a));
    EXPECT_EQ(synthetic_spec(b), synthetic_spec(a)) << n;
    EXPECT_EQ(b.hidden * 1000 + b.head_dim, a.hidden * 1000 + a.head_dim) << n;
  }
}

void expect_bad(const std::string& spec, const std::string& fragment) {
  try {
    (void)synthetic_config(spec);
    ADD_FAILURE() << "accepted: " << spec;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kBadInput) << spec;
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << spec << ": " << e.what();
  }
}

TEST(M12_SyntheticShapes, BadValuesNameTheField) {
  const std::string ok = "layers=2,heads=5,kv_heads=1,head_dim=6,ffn=72,vocab=291";
  expect_bad("synthetic:" + ok, "field 'hidden' missing");
  expect_bad("synthetic:hidden=40,hidden=40," + ok, "field 'hidden' given twice");
  expect_bad("synthetic:hidden=40,depth=3," + ok, "unknown field 'depth'");
  expect_bad("synthetic:hidden=," + ok, "hidden=: expected a decimal in [1, 8192]");
  expect_bad("synthetic:hidden=0," + ok, "hidden=0");
  expect_bad("synthetic:hidden=-4," + ok, "hidden=-4");
  expect_bad("synthetic:hidden=4x," + ok, "hidden=4x");
  expect_bad("synthetic:hidden=99999999999999999999," + ok, "hidden=");
  expect_bad("synthetic:hidden=40," + ok + ",", "'' is not name=value");
  expect_bad("synthetic:hidden 40," + ok, "is not name=value");
  expect_bad("synthetic:", "is not name=value");
  expect_bad("synthetic:hidden=40,layers=2,heads=5,kv_heads=2,head_dim=6,ffn=72,vocab=291", "kv_heads=2 does not divide heads=5");
  expect_bad("synthetic:hidden=40,layers=2,heads=5,kv_heads=1,head_dim=7,ffn=72,vocab=291", "head_dim=7 is odd");
  expect_bad("synthetic:hidden=40,layers=2,heads=5,kv_heads=1,head_dim=6,ffn=72,vocab=64", "vocab=64");
  expect_bad("synthetic:hidden=8192,layers=64,heads=256,kv_heads=256,head_dim=512,ffn=32768,vocab=65536", "more than 2^28");
  expect_bad("tiny", "does not start with 'synthetic:'");
}

TEST(M12_SyntheticShapes, LoadModelTakesTheSpecAndTheSeed) {
  const LoadedModel a = load_model(kSpec, 7), b = load_model(kSpec, 8);
  EXPECT_EQ(a.name, kSpec);
  EXPECT_EQ(a.source, "synthetic, seed 7");
  EXPECT_FALSE(a.real);
  EXPECT_EQ(a.model->config.q_dim(), 30);
  EXPECT_EQ(a.model->weights.layers.size(), 2u);
  EXPECT_EQ(a.model->weights.layers[0].wq.size(), 30u * 40u);
  EXPECT_NE(a.model->weights.tok_emb, b.model->weights.tok_emb);
  try {
    (void)load_model("synthetic:hidden=40", 1);
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kBadInput);
  }
}

// heads * head_dim need not be hidden (M12, and a Hugging Face config's head_dim): the
// reference's attention output holds q_dim values (it held hidden ones, and a drawn shape with
// q_dim > hidden overflowed it: heap corruption in E1_PropEvictEqualsNever on reference).
TEST(M12_SyntheticShapes, ReferenceRunsHeadsWiderThanHidden) {
  const LoadedModel m = load_model("synthetic:hidden=8,layers=2,heads=4,kv_heads=2,head_dim=8,ffn=20,vocab=288", 3);
  const Config& c = m.model->config;
  ASSERT_GT(c.q_dim(), c.hidden);
  const ref::RunState<float> s(c);
  EXPECT_EQ(s.xb2.size(), static_cast<size_t>(c.q_dim()));
  for (const std::string& b : backend_names()) {
    auto backend = make_backend(b, m.model);
    Session session(*backend);
    const std::vector<float> logits = session.append(0, std::vector<Token>{5, 260, 17, 99});
    ASSERT_EQ(logits.size(), 4u * 288u) << b;
    for (float x : logits) ASSERT_TRUE(std::isfinite(x)) << b;
  }
}

// A drawn shape is re-run by the witness as it is printed: exit 0 (exact), and a bad spec is
// exit 2 with one line naming the field and nothing on stdout.
TEST(M12_SyntheticShapes, WitnessRunsASpecAndRejectsABadOne) {
  const std::string path = ::testing::TempDir() + "akv_m12.json";
  std::ofstream(path) << R"({"messages": [{"role": "user", "tokens": [1, 2, 3]}, {"role": "tool", "tokens": [287, 5]},
                            {"role": "user", "tokens": [7, 8, 9, 10]}], "poisoned": [1]})";
  const test::CliRun ok = test::run_akv({"witness", path, "--model", kSpec, "--seed", "7", "--backend", "cpu", "--json"});
  EXPECT_EQ(ok.code, 0) << ok.err;
  EXPECT_TRUE(nlohmann::json::parse(ok.out)["exact"].get<bool>()) << ok.out;
  const test::CliRun bad = test::run_akv({"witness", path, "--model", "synthetic:hidden=40,layers=2,heads=5,kv_heads=1,head_dim=7,ffn=72,vocab=291"});
  EXPECT_EQ(bad.code, 2);
  EXPECT_TRUE(bad.out.empty()) << bad.out;
  EXPECT_NE(bad.err.find("head_dim=7 is odd"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace akv
