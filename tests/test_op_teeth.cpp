// The per-op checks' own teeth (verify/check/op_checks): each catches an op table broken on
// purpose (an output one ulp off, a row left unrotated, a matmul or attention output outside
// its bound, a rounding model that makes the bound vacuous, the catalog's defects of
// plugins/broken), passes on the intact table, and refuses to compare the reference with
// itself. The clause is B10, which these checks stand behind.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "broken_catalog.hpp"
#include "harness_support.hpp"
#include "optimized/composed/plugin.hpp"
#include "verify/check/edges.hpp"
#include "verify/check/op_checks.hpp"
#include "verify/check/op_props.hpp"

using namespace akv;

namespace {

// The portable cpu kernels' table (every CPU runs it), to break one op at a time.
check::OpTable portable() {
  for (const check::OpTable& t : check::optimized_op_tables("cpu"))
    if (t.label == "portable") return t;
  ADD_FAILURE() << "no portable op table";
  return {};
}

// Passed: applied, compared something, nothing failed (Report::passed), with the failures shown.
::testing::AssertionResult passed(const check::Report& r) {
  if (r.passed()) return ::testing::AssertionSuccess();
  auto f = ::testing::AssertionFailure() << "skipped '" << r.skipped << "', " << r.compared << " compared";
  for (const std::string& s : r.failures) f << "\n  " << s;
  return f;
}

}  // namespace

TEST(B10_OpCheckTeeth, AnOutputOneUlpOffFailsTheExactMatmulCase) {
  check::OpTable t = portable();
  EXPECT_TRUE(passed(check::matmul_integers_equal_reference(t)));
  const auto intact = t.matmul;
  t.label = "mutant";
  t.matmul = [intact](float* Y, const float* X, const float* W, int M, int n, int d) {
    intact(Y, X, W, M, n, d);
    Y[M * d - 1] = std::nextafter(Y[M * d - 1], INFINITY);
  };
  const check::Report r = check::matmul_integers_equal_reference(t);
  EXPECT_FALSE(r.passed());
  EXPECT_EQ(r.failures.size(), check::matmul_edge_shapes().size()) << "every shape's last output differs";
}

TEST(B10_OpCheckTeeth, AMeanTakenAsSsTimesOneOverNFailsTheExactRmsNormCase) {
  // The catalog's defect (ss * (1/n) for ss / n: within 2 B2, other bits) and its sound control.
  EXPECT_TRUE(passed(check::rmsnorm_integers_equal_reference(check::plugin_op_table(load_kernels(test::sound_kernels())))));
  const check::OpTable t = check::plugin_op_table(load_kernels(test::broken_kernels("rmsnorm_reciprocal_mean")));
  const check::Report r = check::rmsnorm_integers_equal_reference(t);
  EXPECT_FALSE(r.passed());
  EXPECT_TRUE(check::run_op_property(t, "GT3.rmsnorm.bound").passed()) << "the defect is inside the bound: only bits show it";
  EXPECT_FALSE(check::run_op_property(t, "GT3.rmsnorm.exact").passed());
}

TEST(B10_OpCheckTeeth, ARowLeftUnrotatedFailsBothRopeChecks) {
  check::OpTable t = portable();
  const auto intact = t.rope;
  t.label = "mutant";
  t.rope = [intact](float* x, int M, int heads, int hd, const int32_t* pos, const float* cos, const float* sin) {
    if (M > 1) intact(x, M - 1, heads, hd, pos, cos, sin);  // the last row keeps its input
  };
  EXPECT_FALSE(check::rope_equals_reference(t).passed());
  EXPECT_FALSE(check::run_op_property(t, "GT3.rope.bitwise").passed());
}

TEST(B10_OpCheckTeeth, AMatmulOutsideTwiceB1FailsTheBoundProperty) {
  // The catalog's off-by-one bound (the last product never summed) and its sound control.
  const check::OpTable sound = check::plugin_op_table(load_kernels(test::sound_kernels()));
  const check::OpTable broken = check::plugin_op_table(load_kernels(test::broken_kernels("skip_last_k")));
  for (const char* id : {"B10.matmul.reference", "GT3.matmul.bound"}) {
    EXPECT_TRUE(passed(check::run_op_property(sound, id))) << id;
    EXPECT_FALSE(check::run_op_property(broken, id).passed()) << id;
  }
}

TEST(B10_OpCheckTeeth, AnAttentionOutputOffItsBoundFailsAgainstExact) {
  check::OpTable t = portable();
  EXPECT_TRUE(passed(check::attention_long_within_b14_of_exact(t)));
  const auto intact = t.attention;
  t.label = "mutant";
  t.attention = [intact](float* out, const float* q, const float* k, const float* v, int M, int pos0, int heads, int kvh,
                         int hd) {
    intact(out, q, k, v, M, pos0, heads, kvh, hd);
    out[0] *= 1.0f + 0x1p-6f;  // the bound on plain values of unit size is about 1e-3
  };
  EXPECT_FALSE(check::attention_long_within_b14_of_exact(t).passed());
  EXPECT_FALSE(check::run_op_property(t, "B10.attention.reference").passed());
  EXPECT_FALSE(check::run_op_property(t, "GT3.attention.bound").passed());
}

TEST(B10_OpCheckTeeth, AVacuousDeclaredRoundingFails) {
  // The declared rounding model is what the bound is computed from: counts the bound cannot
  // use give +inf, and an infinite bound checks nothing, so the check fails.
  check::OpTable t = portable();
  t.label = "mutant";
  t.attention_rounding = [](int) { return bounds::AttnRounding{-1, 0, 0}; };
  const check::Report r = check::attention_long_within_b14_of_exact(t);
  EXPECT_FALSE(r.passed());
  ASSERT_FALSE(r.failures.empty());
  EXPECT_NE(r.failures[0].find("not finite"), std::string::npos) << r.failures[0];
  EXPECT_FALSE(check::run_op_property(t, "B10.attention.reference").passed());
  const check::Report drawn = check::run_op_property(t, "GT3.attention.bound");
  EXPECT_FALSE(drawn.passed());
  ASSERT_FALSE(drawn.failures.empty());
  EXPECT_NE(drawn.failures[0].find("not finite"), std::string::npos) << drawn.failures[0];
}

TEST(B10_OpCheckTeeth, TheReferenceIsNotComparedWithItself) {
  const check::Report r = check::matmul_integers_equal_reference(check::reference_ops());
  EXPECT_FALSE(r.skipped.empty());
  EXPECT_EQ(r.compared, 0);
  EXPECT_FALSE(r.passed());
  ASSERT_FALSE(check::op_tables().empty());
  EXPECT_EQ(check::op_tables().front().label, "reference");
  EXPECT_EQ(check::op_tables().back().label, "cuda_emu");
}
