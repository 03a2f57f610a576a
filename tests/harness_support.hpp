// GoogleTest glue of the one harness (verify/check/): variants as readable test parameters,
// a visible skip for a variant this machine lacks, Reports as assertions, same_bits with its
// message. The checks themselves live in verify/check/, written once.
#pragma once
#include <gtest/gtest.h>

#include <ostream>
#include <span>
#include <string>
#include <vector>

#include "verify/check/report.hpp"
#include "verify/check/same_bits.hpp"
#include "verify/check/variants.hpp"

namespace akv::check {
/// How GoogleTest prints a variant (ctest's "GetParam() = ..."): its label, not raw bytes.
inline void PrintTo(const Variant& v, std::ostream* os) { *os << v.label; }
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

/// A suite over variants: a variant this build or machine cannot run is SKIPPED, saying why.
class VariantTest : public ::testing::TestWithParam<check::Variant> {
 protected:
  void SetUp() override {
    if (!GetParam().unavailable.empty())
      GTEST_SKIP() << GetParam().label << ": " << GetParam().unavailable << ": SKIPPED, not checked";
  }
  const check::Variant& variant() const { return GetParam(); }
};

/// Asserts a Report: every failure is a test failure; a check that compared nothing fails; a
/// check that does not apply to the variant is SKIPPED with its reason.
inline void expect_passed(const check::Report& r) {
  if (!r.skipped.empty()) GTEST_SKIP() << r.skipped << ": SKIPPED, not checked";
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
