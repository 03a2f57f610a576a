// O5's second configuration: a defect that is deterministic per configuration (a matmul whose
// sum follows the thread count) passes a witness that builds both runs under one
// configuration, and fails the witness's default, which builds the never-shown run again under
// another thread count (spec/operations.md O5).
#include <gtest/gtest.h>

#include "prop_support.hpp"
#include "readers/conversation/chat_parse.hpp"
#include "tests/broken_catalog.hpp"
#include "runtime/backends.hpp"
#include "verify/witness.hpp"

using namespace akv;

namespace {

Conversation conv() {
  return load_conversation(std::string(AKV_SOURCE_DIR) + "/examples/conversations/ad01_banking_ut0_gpt4omini.json");
}

WitnessOptions tiny() {
  WitnessOptions o;
  o.model = "tiny";
  return o;
}

// The catalog's split-K by the thread count (plugins/broken), at `threads`.
BackendFactory mutant(int threads) {
  return [threads](std::shared_ptr<const Model> m) {
    BackendOptions b;
    b.kernels = test::broken_kernels("split_k_by_threads");
    b.threads = threads;
    return make_backend("cpu", std::move(m), b);
  };
}

}  // namespace

TEST(O5_WitnessConfigs, OneConfigurationPassesAThreadSplitDefect) {
  const WitnessReport r = run_witness(conv(), tiny(), mutant(2));
  EXPECT_TRUE(r.same_config);
  EXPECT_TRUE(r.passed()) << "the defect is deterministic at 2 threads: one configuration cannot see it\n" << to_text(r);
  EXPECT_NE(to_text(r).find("one configuration only"), std::string::npos) << to_text(r);
  EXPECT_NE(to_text(r).find("PASS (one configuration)"), std::string::npos) << to_text(r);
}

TEST(O5_WitnessConfigs, ASecondThreadCountCatchesIt) {
  const WitnessReport r = run_witness(conv(), tiny(), mutant(2), mutant(1));
  EXPECT_FALSE(r.same_config);
  EXPECT_TRUE(r.exact()) << "evict == never within the first configuration";
  EXPECT_FALSE(r.cross_config_identical);
  EXPECT_FALSE(r.passed());
  const std::string text = to_text(r);
  EXPECT_NE(text.find("NOT identical"), std::string::npos) << text;
  EXPECT_NE(text.find("the never-shown run differs under"), std::string::npos) << text;
}

TEST(O5_WitnessConfigs, TheDefaultRunsASecondConfigurationAndPasses) {
  const WitnessReport r = run_witness(conv(), tiny());
  EXPECT_FALSE(r.same_config);
  EXPECT_TRUE(r.cross_config_identical) << to_text(r);
  EXPECT_TRUE(r.passed()) << to_text(r);
  EXPECT_NE(r.cross_config.find("scratch NaN"), std::string::npos) << r.cross_config;
  EXPECT_NE(r.cross_config, r.isa) << "another configuration than the first";
  const nlohmann::json j = to_json(r);
  EXPECT_EQ(j["same_config"], false);
  EXPECT_EQ(j["cross_config_identical"], true);
  WitnessOptions one = tiny();
  one.same_config = true;
  EXPECT_TRUE(run_witness(conv(), one).same_config);
}

TEST(O5_WitnessConfigs, SecondConfigurationChoice) {
  BackendDescription first{"cpu", "avx2", 2, std::nullopt};
  const BackendOptions o = cross_config_options("cpu", first, {});
  EXPECT_EQ(o.threads, 1);
  EXPECT_NE(o.isa, "avx2");
  first.threads = 1;
  EXPECT_EQ(cross_config_options("cpu", first, {}).threads, 2);
  const BackendOptions pinned = cross_config_options("cpu", first, {}, 3, "portable");
  EXPECT_EQ(pinned.threads, 3);
  EXPECT_EQ(pinned.isa, "portable");
  EXPECT_EQ(cross_config_options("reference", first, {}).isa, BackendOptions{}.isa) << "only the scratch poison differs";
}
