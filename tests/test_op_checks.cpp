// The per-op checks of verify/check/op_checks.hpp, written once, instantiated per op table
// under each backend's clauses: the cpu kernels on every ISA (K1, K3-K6, K12), cuda-emu
// (G2-G6, G11). Names read `K12_Bounds/Matmul.RowsDotAndScoresWithinTwiceB1AndB4/avx512`
// (clause / op . check / table); a table this machine lacks is SKIPPED, never passed. The
// backend-specific orders (K1 chain, K2 dot, K4 blocks, G3 tree) stay in test_cpu_kernels.cpp
// and test_cuda_arith.cpp; B14 against the exact value is in test_bounds_ops.cpp.
#include <gtest/gtest.h>

#include "harness_support.hpp"
#include "verify/check/op_checks.hpp"

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

// ---- Within the proven bounds of the reference (spec/bounds.md B10, B14)

class Matmul : public test::OpTableTest {};
TEST_P(Matmul, RowsDotAndScoresWithinTwiceB1AndB4) { expect_passed(check::matmul_within_bounds(table())); }

class RMSNorm : public test::OpTableTest {};
TEST_P(RMSNorm, WithinTwiceB2) { expect_passed(check::rmsnorm_within_bounds(table())); }

class RopeSwigluAdd : public test::OpTableTest {};
TEST_P(RopeSwigluAdd, BitwiseTheReference) { expect_passed(check::rope_swiglu_add_bitwise(table())); }

class Attention : public test::OpTableTest {};
TEST_P(Attention, HeadWithinB14OfReferencePlusOwn) { expect_passed(check::attention_within_bounds(table())); }

class Logits : public test::OpTableTest {};
TEST_P(Logits, WithinTwiceB9) { expect_passed(check::logits_within_bounds(table())); }

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
