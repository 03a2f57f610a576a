// spec/leakage.md L11: what a cache type costs against f32, measured as L9 measures a policy.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "cli_support.hpp"
#include "leakage/kv_cost.hpp"
#include "readers/conversation/chat_parse.hpp"
#include "reference/error.hpp"

using namespace akv;

TEST(L11_KvCost, EachTypeAgainstF32OnTheSameBackend) {
  const std::string file = std::string(AKV_SOURCE_DIR) + "/examples/conversations/ja01_banking_bill_important_instructions.json";
  const Conversation conv = load_conversation(file);
  KvCostOptions o;
  o.model = "small";
  o.continuation = 16;
  const KvCostReport r = run_kv_cost(conv, file, o);
  ASSERT_EQ(r.types.size(), 2u);
  EXPECT_EQ(r.f32_bytes_per_token, 2u * 4 * 128 * 4);  // small: 4 layers, kv_dim 128
  for (const KvTypeCost& k : r.types) {
    EXPECT_GT(k.max_abs, 0.0f) << kv_type_name(k.type);  // the type changes the function (S5)
    EXPECT_GT(k.kl, 0.0) << kv_type_name(k.type);
    EXPECT_TRUE(std::isfinite(k.max_abs));
    EXPECT_EQ(k.non_finite, 0u);
  }
  EXPECT_EQ(r.types[0].bytes_per_token * 2, r.f32_bytes_per_token);                            // f16: half
  EXPECT_EQ(r.types[1].bytes_per_token, 2u * 4 * (128 / 32) * 34);                             // q8_0: 34 bytes a block
  EXPECT_LT(r.types[0].max_abs, r.types[1].max_abs);  // binary16 rounds finer than Q8_0's 8 bits
  const nlohmann::json j = to_json(r);
  EXPECT_EQ(j["types"][1]["kv_type"], "q8_0");
  EXPECT_NE(kv_cost_markdown({r}).find("| q8_0 |"), std::string::npos);
  // Refused, exit 2: f32 against itself, an unknown type, a type tiny cannot store.
  for (const char* t : {"f32", "f8", "q8_0"}) {
    const test::CliRun c = test::run_akv({"kv-cost", file, "--model", "tiny", "--types", t});
    EXPECT_EQ(c.code, 2) << t << ": " << c.err;
    EXPECT_TRUE(c.out.empty());
  }
}
