// B16 on SmolLM2-135M-Instruct's own tensors (spec/bounds.md B16): the reference's forward pass
// over a real conversation, op by op, and every optimized op table (cpu per ISA, cuda-emu) on
// the same inputs, each output within B_ref + B_opt of the reference's.
#include <gtest/gtest.h>

#include <cstdio>

#include "../support.hpp"
#include "readers/conversation/chat_parse.hpp"
#include "reference/backend.hpp"
#include "verify/check/per_op.hpp"
#include "verify/check/run.hpp"
#include "runtime/digest.hpp"
#include "runtime/models.hpp"

using namespace akv;

TEST(B16_RealModelPerOp, EveryOpOfEveryLayerOfSmolLM2WithinItsBound) {
  const LoadedModel lm = load_model(kDefaultRealModel);
  const Conversation conv = load_conversation(test::source_dir() + "/tests/real_model/data/short_poisoned.json");
  const EncodedConversation e = lm.encoder->encode(conv);
  std::vector<Token> toks = e.preamble;
  for (const auto& s : e.spans) toks.insert(toks.end(), s.begin(), s.end());
  ASSERT_GE(toks.size(), 32u);
  toks.resize(32);  // about 50 s here: the portable, SIMDe and cuda-emu tables are software
  const check::PerOpReport r = check::per_op_check(*lm.model, toks, check::optimized_op_tables(), lm.name);
  EXPECT_TRUE(r.sound()) << check::to_text(r);
  EXPECT_EQ(r.stats.size(), r.tables.size() * (static_cast<size_t>(lm.model->config.n_layers) * 15 + 2));
  const check::OpStat* w = r.worst();
  ASSERT_NE(w, nullptr);
  EXPECT_GT(w->max_ratio, 0.0);
  std::printf("%s", check::to_text(r).c_str());
  // The trace is the reference: its logits are the reference backend's, bit for bit.
  auto ref = make_reference_backend(lm.model);
  EXPECT_EQ(r.logits_sha256, sha256_floats(check::run_chunked(*ref, toks, {toks.size()}).logits));
}
