// GoogleTest glue of the one harness (verify/check/): variants and op tables as readable test parameters,
// a visible skip for a variant this machine lacks, Reports as assertions, same_bits with its
// message. The checks themselves live in verify/check/, written once.
#pragma once
#include <gtest/gtest.h>

#include <cstdio>
#include <ostream>
#include <span>
#include <string>
#include <vector>

#include "verify/check/ops.hpp"
#include "verify/check/report.hpp"
#include "verify/check/same_bits.hpp"
#include "verify/check/variants.hpp"

namespace akv::check {
/// How GoogleTest prints a variant (ctest's "GetParam() = ..."): its label, not raw bytes.
inline void PrintTo(const Variant& v, std::ostream* os) { *os << v.label; }
/// And an op table.
inline void PrintTo(const OpTable& t, std::ostream* os) { *os << t.label; }
}  // namespace akv::check

namespace akv::test {

/// The test-name suffix of a variant: its label ("avx512_t2").
inline std::string variant_name(const ::testing::TestParamInfo<check::Variant>& i) { return i.param.label; }

/// The cpu variants at the default two threads: one per ISA, for checks of kernels called
/// directly (threads do not reach them).
inline std::vector<check::Variant> cpu_isa_variants() {
  std::vector<check::Variant> out;
  for (const check::Variant& v : check::variants("cpu"))
    if (v.threads == 2) out.push_back(v);
  return out;
}

/// The cuda-emu and cuda variants.
inline std::vector<check::Variant> cuda_variants() {
  auto v = check::variants("cuda-emu"), d = check::variants("cuda");
  v.insert(v.end(), d.begin(), d.end());
  return v;
}

/// A suite over labelled parameters (variants, op tables): one this build or machine cannot
/// run is SKIPPED, saying why.
template <class Param>
class AvailableTest : public ::testing::TestWithParam<Param> {
 protected:
  void SetUp() override {
    const Param& p = this->GetParam();
    if (!p.unavailable.empty()) GTEST_SKIP() << p.label << ": " << p.unavailable << ": SKIPPED, not checked";
  }
};

/// A suite over backend variants.
class VariantTest : public AvailableTest<check::Variant> {
 protected:
  const check::Variant& variant() const { return GetParam(); }
};

/// The test-name suffix of an op table: its label ("avx512", "cuda_emu").
inline std::string op_table_name(const ::testing::TestParamInfo<check::OpTable>& i) { return i.param.label; }

/// A suite over op tables.
class OpTableTest : public AvailableTest<check::OpTable> {
 protected:
  const check::OpTable& table() const { return GetParam(); }
};

/// Asserts a Report: every failure is a test failure; a check that compared nothing fails; a
/// check that does not apply to the variant is SKIPPED with its reason. Observed closeness to
/// the bounds is printed and recorded as test properties.
inline void expect_passed(const check::Report& r) {
  if (!r.skipped.empty()) GTEST_SKIP() << r.skipped << ": SKIPPED, not checked";
  for (const auto& [what, c] : r.observed) {
    std::printf("[ observed ] %s\n", c.line(what).c_str());
    ::testing::Test::RecordProperty(what + "_max_abs", std::to_string(c.max_dist));
    ::testing::Test::RecordProperty(what + "_max_frac_of_bound", std::to_string(c.max_frac));
  }
  EXPECT_GT(r.compared, 0) << "the check compared nothing";
  for (const std::string& f : r.failures) ADD_FAILURE() << f;
}

/// check::same_bits as a GoogleTest predicate: a failure says where the bits first differ.
inline ::testing::AssertionResult same_bits(std::span<const float> a, std::span<const float> b) {
  const check::BitsDiff d = check::same_bits(a, b);
  if (d) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << d.what();
}

}  // namespace akv::test
