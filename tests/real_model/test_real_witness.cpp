// The witness on the real model (spec/operations.md O5, spec/theorems.md E1-E3): every poisoned
// bundled conversation, tokenized by SmolLM2's BPE and ChatML template (spec/tokenizer.md), on
// SmolLM2-135M-Instruct's dequantized weights: evict == never bit for bit, and the control
// (keeping the span) moves the logits. The scalar reference and cuda-emu run one short one.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>

#include "../cli_support.hpp"
#include "../support.hpp"
#include "../text_file.hpp"
#include "readers/conversation/chat_parse.hpp"
#include "runtime/backends.hpp"
#include "runtime/models.hpp"
#include "verify/witness.hpp"

using namespace akv;
namespace fs = std::filesystem;

namespace {

// Bundled conversations with a "poisoned" list: examples/conversations, plus any file of
// ../shared/data/conversations whose bytes differ from the example of the same name.
std::vector<std::string> poisoned_conversations() {
  std::vector<std::string> paths;
  for (const std::string& n : test::bundled_conversations()) paths.push_back(test::example(n));
  const fs::path shared = fs::path(test::source_dir()).parent_path() / "shared" / "data" / "conversations";
  if (fs::is_directory(shared))
    for (const auto& e : fs::directory_iterator(shared)) {
      if (e.path().extension() != ".json") continue;
      const std::string twin = test::example(e.path().filename().string());
      if (!fs::exists(twin) || test::read_text(twin) != test::read_text(e.path())) paths.push_back(e.path().string());
    }
  std::vector<std::string> out;
  for (const std::string& p : paths)
    if (!load_conversation(p).poisoned.empty()) out.push_back(p);
  std::sort(out.begin(), out.end());
  return out;
}

void expect_exact(const WitnessReport& r) {
  EXPECT_TRUE(r.exact());
  EXPECT_TRUE(r.passed());
  EXPECT_EQ(r.evict_vs_never_max_abs, 0.0f);
  EXPECT_TRUE(r.caches_identical);
  EXPECT_TRUE(r.logits_identical);
  EXPECT_EQ(r.cache_sha256_evicted, r.cache_sha256_never);
  EXPECT_EQ(r.logits_sha256_evicted, r.logits_sha256_never);
  EXPECT_GT(r.poison_vs_never_max_abs, 0.0f) << "E2: keeping the span must move the logits";
  EXPECT_NE(r.logits_sha256_poisoned, r.logits_sha256_never);
  EXPECT_TRUE(r.prefix_untouched);
  EXPECT_EQ(r.tokens_never, r.truncated_at + r.tokens_recomputed);
  EXPECT_EQ(r.encoder, "chatml");
  std::printf("%s on %s: %zu tokens, evicted %zu, recomputed %zu; build %.0f ms, evict %.0f ms, never %.0f ms\n",
              r.model.c_str(), r.backend.c_str(), r.tokens_poisoned, r.tokens_evicted, r.tokens_recomputed,
              r.ms_build_poisoned, r.ms_evict, r.ms_build_never);
}

WitnessReport witness(const std::string& path, const std::string& backend) {
  WitnessOptions o;
  o.model = kDefaultRealModel;
  o.backend = backend;
  return run_witness(load_conversation(path), o);
}

std::string stem(const ::testing::TestParamInfo<std::string>& info) {
  std::string n = fs::path(info.param).stem().string();
  n = n.substr(0, n.find('_'));
  if (info.param.find("/shared/") != std::string::npos) n = "shared_" + n;
  return n;
}

}  // namespace

TEST(E1_RealModelWitness, EveryPoisonedConversationIsCovered) {
  // Ten of the thirteen bundled conversations carry injected tool results; none may vanish.
  EXPECT_GE(poisoned_conversations().size(), 10u);
}

class E1_RealModelConversation : public ::testing::TestWithParam<std::string> {};

TEST_P(E1_RealModelConversation, EvictEqualsNeverOnCpu) { expect_exact(witness(GetParam(), "cpu")); }

INSTANTIATE_TEST_SUITE_P(Bundled, E1_RealModelConversation, ::testing::ValuesIn(poisoned_conversations()), stem);

// The same short conversation on the scalar reference and on cuda-emu (each is exact on its
// own, I1), and all backends agree on the tokens and the cut.
TEST(E1_RealModelBackends, ReferenceAndCudaEmuOnAShortConversation) {
  const std::string f = test::source_dir() + "/tests/real_model/data/short_poisoned.json";
  const WitnessReport cpu = witness(f, "cpu");
  expect_exact(cpu);
  for (const std::string b : {"reference", "cuda-emu"}) {
    const auto names = backend_names();
    ASSERT_NE(std::find(names.begin(), names.end(), b), names.end()) << b << " is not built";
    const WitnessReport r = witness(f, b);
    expect_exact(r);
    EXPECT_EQ(r.tokens_poisoned, cpu.tokens_poisoned);
    EXPECT_EQ(r.truncated_at, cpu.truncated_at);
  }
}

// O10 on the real template: an account number removed from inside a tool result (in Japanese:
// the BPE re-merges across the cut) is exact against the conversation rendered without it.
TEST(O10_RealModelRedact, AnAccountNumberInsideAToolResult) {
  WitnessOptions o;
  o.model = kDefaultRealModel;
  o.redact = {{2, "0123-456-\u666e\u901a-789012"}};
  const WitnessReport r = run_witness(load_conversation(test::example("ja01_banking_bill_important_instructions.json")), o);
  expect_exact(r);
  ASSERT_EQ(r.redacted.size(), 1u);
  EXPECT_EQ(r.redacted[0].occurrences, 1u);
  EXPECT_GT(r.tokens_evicted, r.tokens_inserted);
  EXPECT_EQ(r.tokens_recomputed, r.tokens_inserted + r.tokens_survivors);
}

// The CLI: --model smollm2 and --model PATH.gguf are the same model, the same bits.
TEST(O5_RealModelCli, NamedModelAndPathGiveTheSameReport) {
  const std::string f = test::source_dir() + "/tests/real_model/data/short_poisoned.json";
  const test::CliRun a = test::run_akv({"witness", f, "--model", "smollm2", "--json"});
  ASSERT_EQ(a.code, 0) << a.out << a.err;
  const test::CliRun b = test::run_akv({"witness", f, "--model", default_real_model_path(), "--json"});
  ASSERT_EQ(b.code, 0) << b.out << b.err;
  const auto ja = nlohmann::json::parse(a.out), jb = nlohmann::json::parse(b.out);
  EXPECT_TRUE(ja["exact"].get<bool>());
  EXPECT_EQ(ja["encoder"], "chatml");
  EXPECT_EQ(ja["cache_sha256_never"], jb["cache_sha256_never"]);
  EXPECT_EQ(ja["logits_sha256_never"], jb["logits_sha256_never"]);
  EXPECT_EQ(ja["logits_sha256_poisoned"], jb["logits_sha256_poisoned"]);
}
