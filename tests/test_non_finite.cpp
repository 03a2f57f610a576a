// A comparison that meets a NaN or an Inf compares nothing (spec/arithmetic.md A5): the
// comparisons, the JSON numbers, the localiser that names where the first one appears, and the
// witness, which fails (never passes) and says where.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "optimized/cpu/isa.hpp"
#include "optimized/cpu/kernels.hpp"
#include "optimized/cpu/localise.hpp"
#include "readers/conversation/chat_parse.hpp"
#include "reference/model.hpp"
#include "support.hpp"
#include "verify/check/same_bits.hpp"
#include "verify/compare.hpp"
#include "verify/json_number.hpp"
#include "verify/witness.hpp"
#include "wrapped_backend.hpp"

using namespace akv;

namespace {

constexpr float kNan = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// The tiny model with one weight replaced by `v`: final_norm[3] (layer -1) or layer 1's W_q[5].
std::shared_ptr<const Model> tiny_with(float v, bool in_final_norm) {
  auto m = std::make_shared<Model>(*make_model(config_by_name("tiny"), 1));
  if (in_final_norm) m->weights.final_norm[3] = v;
  else m->weights.layers.at(1).wq[5] = v;
  return m;
}

std::vector<Token> some_tokens(int n, int vocab) {
  std::vector<Token> t;
  for (int i = 0; i < n; ++i) t.push_back((i * 37 + 11) % vocab);
  return t;
}

WitnessOptions tiny_options() {
  WitnessOptions o;
  o.model = "tiny";
  return o;
}

// Every logit of every call is 0: "identical" everywhere, so only the control can tell.
class ConstantLogits final : public test::WrappedReference {
 public:
  explicit ConstantLogits(std::shared_ptr<const Model> m) : WrappedReference(std::move(m), "constant-logits") {}
  void forward_rows(KVCache& c, std::span<const Token> t, RowList rows, std::span<float> l) override {
    inner_->forward_rows(c, t, rows, l);
    std::fill(l.begin(), l.end(), 0.0f);
  }
};

}  // namespace

TEST(A5_Compare, SameNanBytesAreNotEqual) {
  const std::vector<float> a{1.0f, kNan, 2.0f}, b = a;
  const Diff d = compare(a, b);
  EXPECT_TRUE(d.same_bytes);
  EXPECT_FALSE(d.equal()) << "two NaN runs must not read as identical";
  EXPECT_FALSE(d.comparable());
  EXPECT_EQ(d.non_finite, 2u);
  EXPECT_EQ(d.first_non_finite, 1u);
  const check::BitsDiff s = check::same_bits(a, b);
  EXPECT_FALSE(s);
  EXPECT_EQ(s.first_non_finite, 1u);
  EXPECT_NE(s.what().find("non-finite"), std::string::npos) << s.what();
}

TEST(A5_Compare, InfOnOneSideAndFiniteVectors) {
  const std::vector<float> a{1.0f, 2.0f, 3.0f}, b{1.0f, kInf, 3.5f};
  const Diff d = compare(a, b);
  EXPECT_FALSE(d.equal());
  EXPECT_EQ(d.non_finite, 1u);
  EXPECT_FALSE(d.first_in_a);
  EXPECT_EQ(d.max_abs, 0.5f) << "max|delta| covers the finite pairs";
  EXPECT_TRUE(compare(a, a).equal());
  EXPECT_TRUE(check::same_bits(a, a));
  EXPECT_FALSE(compare(a, std::vector<float>{1.0f}).comparable());
}

TEST(A5_JsonNumber, NonFiniteIsAStringNeverNull) {
  EXPECT_EQ(json_number(1.5), nlohmann::json(1.5));
  EXPECT_EQ(json_number(NAN), nlohmann::json("nan"));
  EXPECT_EQ(json_number(INFINITY), nlohmann::json("inf"));
  EXPECT_EQ(json_number(-INFINITY), nlohmann::json("-inf"));
  EXPECT_FALSE(json_number(NAN).is_null());
}

TEST(A5_Localise, FirstNonFiniteStepNamesLayerOpAndRow) {
  const cpu::Kernels& k = cpu::kernels_for(cpu::resolve_isa("auto"));
  const auto clean = make_model(config_by_name("tiny"), 1);
  const auto t = some_tokens(12, clean->config.vocab);
  EXPECT_FALSE(cpu::first_non_finite_step(clean, t, k).has_value());

  const auto q = cpu::first_non_finite_step(tiny_with(kNan, false), t, k);
  ASSERT_TRUE(q.has_value());
  EXPECT_EQ(q->layer, 1);
  EXPECT_EQ(q->op, "matmul (wq, wk, wv)");
  EXPECT_EQ(q->row, 0) << "every row reads W_q";
  EXPECT_EQ(q->index, 0) << "W_q[5] is row 0, column 5: it reaches output 0";
  EXPECT_NE(cpu::describe_non_finite(*q).find("layer 1, matmul (wq, wk, wv)"), std::string::npos) << cpu::describe_non_finite(*q);

  const auto n = cpu::first_non_finite_step(tiny_with(kInf, true), t, k);
  ASSERT_TRUE(n.has_value());
  EXPECT_EQ(n->layer, -1);
  EXPECT_EQ(n->op, "rmsnorm (final_norm)");
  EXPECT_EQ(n->index, 3);
}

TEST(A5_Witness, NanLogitsFailAndSayWhere) {
  const Conversation c = load_conversation(test::example("ad01_banking_ut0_gpt4omini.json"));
  const auto nan_model = tiny_with(kNan, true);
  const WitnessReport r = run_witness(c, tiny_options(), [&](std::shared_ptr<const Model>) {
    return make_reference_backend(nan_model);  // NaN in final_norm: every logit NaN, caches finite
  });
  EXPECT_FALSE(r.passed());
  EXPECT_FALSE(r.exact());
  EXPECT_FALSE(r.control_moved);
  EXPECT_TRUE(std::isnan(r.evict_vs_never_max_abs));
  EXPECT_NE(r.non_finite.find("the poisoned run's logits hold nan"), std::string::npos) << r.non_finite;
  // The witness replays the model it loaded (finite): the backend under test is named.
  EXPECT_NE(r.non_finite.find("the backend under test made it"), std::string::npos) << r.non_finite;
  const nlohmann::json j = to_json(r);
  EXPECT_EQ(j["passed"], false);
  EXPECT_EQ(j["evict_vs_never_max_abs"], "nan") << "never null";
  EXPECT_EQ(j["poison_vs_never_max_abs"], "nan");
  EXPECT_TRUE(j["non_finite"].is_string());
  const std::string text = to_text(r);
  EXPECT_NE(text.find("FAIL: a NaN or an Inf"), std::string::npos) << text;
  EXPECT_EQ(text.find("PASS"), std::string::npos) << text;
}

TEST(A5_Witness, FiniteRunsReportNoNonFinite) {
  const Conversation c = load_conversation(test::example("ad01_banking_ut0_gpt4omini.json"));
  const WitnessReport r = run_witness(c, tiny_options());
  EXPECT_TRUE(r.passed());
  EXPECT_TRUE(r.non_finite.empty()) << r.non_finite;
  EXPECT_TRUE(to_json(r)["non_finite"].is_null());
}

// E2 as a condition of the witness: a backend whose logits never move gives "evict == never"
// for free, and the witness says that proves nothing.
TEST(E2_WitnessControl, AControlThatDoesNotMoveFails) {
  const Conversation c = load_conversation(test::example("ad01_banking_ut0_gpt4omini.json"));
  const WitnessReport r = run_witness(c, tiny_options(), [](std::shared_ptr<const Model> m) {
    return std::make_unique<ConstantLogits>(std::move(m));
  });
  EXPECT_TRUE(r.exact()) << "the bits agree (zeros)";
  EXPECT_FALSE(r.control_moved);
  EXPECT_FALSE(r.passed());
  EXPECT_EQ(to_json(r)["control_moved"], false);
  const std::string text = to_text(r);
  EXPECT_NE(text.find("the control did not move"), std::string::npos) << text;
}
