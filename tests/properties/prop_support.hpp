// Runs a registered property (verify/props/) as one GoogleTest, on one backend.
#pragma once
#include <cctype>
#include <gtest/gtest.h>

#include <string>

#include "runtime/backends.hpp"

namespace akv::test {

/// Runs property `id` ("Suite.Name") on `backend` with the suite's parameters (RC_PARAMS,
/// >= 200 cases) and profile ($AKV_PROFILE, default "ci"). On failure: GoogleTest failure
/// with RapidCheck's message, the RC_PARAMS reproduce string, and, when
/// $AKV_COUNTEREXAMPLE_DIR is set, the counterexample file and its `akv witness` command.
void check_property(const std::string& id, const std::string& backend);

/// Backend names as GoogleTest parameter names: "cuda-emu" -> "cuda_emu".
inline std::string backend_param_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string n = info.param;
  for (char& c : n)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return n;
}

}  // namespace akv::test

/// Declares the parameterised suite `Suite` (named after its clause) over every backend.
#define AKV_PROPERTY_SUITE(Suite)                                                      \
  class Suite : public ::testing::TestWithParam<std::string> {};                       \
  INSTANTIATE_TEST_SUITE_P(Backends, Suite, ::testing::ValuesIn(::akv::backend_names()), \
                           ::akv::test::backend_param_name)

/// One property of the registry as TEST_P(Suite, Name).
#define AKV_PROPERTY(Suite, Name) \
  TEST_P(Suite, Name) { ::akv::test::check_property(#Suite "." #Name, GetParam()); }
