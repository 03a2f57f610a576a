// The per-op edge tables of verify/check/op_checks.hpp and the accuracy properties of the one
// per-op suite (verify/check/op_props.hpp), written once, instantiated per op table under each
// backend's clauses: the cpu kernels on every ISA (K1, K3-K6, K12), cuda-emu (G2-G6, G11). Names read `K12_Bounds/Matmul.WithinB1OfExactAndRowsDotAndScoresWithinTwiceB1AndB4/avx512`
// (clause / op . check / table); a table this machine lacks is SKIPPED, never passed. The
// backend-specific orders (K1 chain, K2 dot, K4 blocks, G3 tree) stay in test_cpu_kernels.cpp
// and test_cuda_arith.cpp; B14 against the exact value is in test_bounds_ops.cpp.
#include <gtest/gtest.h>

#include "harness_support.hpp"
#include "verify/check/op_checks.hpp"
#include "verify/check/op_props.hpp"

using namespace akv;
using test::expect_passed;

namespace {

// ---- The reference's bits where every conforming order rounds alike

class MatmulBits : public test::OpTableTest {};
TEST_P(MatmulBits, SmallIntegersEqualTheReference) { expect_passed(check::matmul_integers_equal_reference(table())); }

class RmsNormBits : public test::OpTableTest {};
TEST_P(RmsNormBits, SmallIntegersEqualTheReference) { expect_passed(check::rmsnorm_integers_equal_reference(table())); }

class RopeBits : public test::OpTableTest {};
TEST_P(RopeBits, EqualsTheReferenceOnTheOneTable) { expect_passed(check::rope_equals_reference(table())); }

class ElementwiseBits : public test::OpTableTest {};
TEST_P(ElementwiseBits, SwigluAndResidualAddEqualTheReference) { expect_passed(check::swiglu_add_equal_reference(table())); }

class AttentionBits : public test::OpTableTest {};
TEST_P(AttentionBits, OneDominantKeyEqualsTheReference) {
  expect_passed(check::attention_dominant_key_equals_reference(table()));
}
TEST_P(AttentionBits, UniformScoresEqualTheReference) { expect_passed(check::attention_uniform_equals_reference(table())); }

// ---- Within the proven bounds (spec/bounds.md B1, B2, B9, B10, B14): the suite's properties

// Each property by id on this table (run_op_property: RapidCheck, at least kMinCases cases).
void expect_properties(const check::OpTable& t, std::initializer_list<const char*> ids) {
  for (const char* id : ids) {
    SCOPED_TRACE(id);
    expect_passed(check::run_op_property(t, id));
  }
}

class Matmul : public test::OpTableTest {};
TEST_P(Matmul, WithinB1OfExactAndRowsDotAndScoresWithinTwiceB1AndB4) {
  expect_properties(table(), {"GT3.matmul.bound", "B10.matmul.reference"});
}

class RMSNorm : public test::OpTableTest {};
TEST_P(RMSNorm, WithinTwiceB2AndM7BitwiseOnExactSums) { expect_properties(table(), {"GT3.rmsnorm.bound", "GT3.rmsnorm.exact"}); }

class RopeSwigluAdd : public test::OpTableTest {};
TEST_P(RopeSwigluAdd, BitwiseTheReference) {
  expect_properties(table(), {"GT3.rope.bitwise", "GT3.swiglu.bitwise", "GT3.add.bitwise"});
}

class Attention : public test::OpTableTest {};
TEST_P(Attention, HeadWithinB14OfReferencePlusOwn) { expect_properties(table(), {"B10.attention.reference"}); }

class Logits : public test::OpTableTest {};
TEST_P(Logits, WithinTwiceB9) { expect_properties(table(), {"B9.logits.reference"}); }

const auto kCpu = ::testing::ValuesIn(check::optimized_op_tables("cpu"));
const auto kEmu = ::testing::ValuesIn(check::optimized_op_tables("cuda-emu"));

}  // namespace

INSTANTIATE_TEST_SUITE_P(K1_Matmul, MatmulBits, kCpu, test::op_table_name);
INSTANTIATE_TEST_SUITE_P(K3_RMSNorm, RmsNormBits, kCpu, test::op_table_name);
INSTANTIATE_TEST_SUITE_P(K5_RoPE, RopeBits, kCpu, test::op_table_name);
INSTANTIATE_TEST_SUITE_P(K6_Elementwise, ElementwiseBits, kCpu, test::op_table_name);
INSTANTIATE_TEST_SUITE_P(K4_Attention, AttentionBits, kCpu, test::op_table_name);
INSTANTIATE_TEST_SUITE_P(G2_Matmul, MatmulBits, kEmu, test::op_table_name);
INSTANTIATE_TEST_SUITE_P(G3_RmsNorm, RmsNormBits, kEmu, test::op_table_name);
INSTANTIATE_TEST_SUITE_P(G4_Rope, RopeBits, kEmu, test::op_table_name);
INSTANTIATE_TEST_SUITE_P(G6_Elementwise, ElementwiseBits, kEmu, test::op_table_name);
INSTANTIATE_TEST_SUITE_P(G5_Attention, AttentionBits, kEmu, test::op_table_name);

INSTANTIATE_TEST_SUITE_P(K12_Bounds, Matmul, kCpu, test::op_table_name);
INSTANTIATE_TEST_SUITE_P(K12_Bounds, RMSNorm, kCpu, test::op_table_name);
INSTANTIATE_TEST_SUITE_P(K12_Bounds, RopeSwigluAdd, kCpu, test::op_table_name);
INSTANTIATE_TEST_SUITE_P(K12_Bounds, Attention, kCpu, test::op_table_name);
INSTANTIATE_TEST_SUITE_P(K12_Bounds, Logits, kCpu, test::op_table_name);
INSTANTIATE_TEST_SUITE_P(G11_Bounds, Matmul, kEmu, test::op_table_name);
INSTANTIATE_TEST_SUITE_P(G11_Bounds, RMSNorm, kEmu, test::op_table_name);
INSTANTIATE_TEST_SUITE_P(G11_Bounds, RopeSwigluAdd, kEmu, test::op_table_name);
INSTANTIATE_TEST_SUITE_P(G11_Bounds, Attention, kEmu, test::op_table_name);
INSTANTIATE_TEST_SUITE_P(G11_Bounds, Logits, kEmu, test::op_table_name);
