// Every backend describes itself through the interface (spec/operations.md O1): reports read
// Backend::describe(), never a downcast to a concrete backend.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "support.hpp"
#include "runtime/backends.hpp"

using namespace akv;

TEST(O1_BackendDescribes, EveryBackendFillsItsDescription) {
  for (const std::string& name : backend_names()) {
    auto b = make_backend(name, test::tiny());
    b->set_scratch_poison(std::numeric_limits<float>::quiet_NaN());
    BackendDescription d = b->describe();
    EXPECT_EQ(d.name, name);
    EXPECT_EQ(d.name, b->name());
    EXPECT_FALSE(d.isa.empty()) << name;
    EXPECT_GE(d.threads, 1) << name;
    ASSERT_TRUE(d.scratch_poison.has_value()) << name;
    EXPECT_TRUE(std::isnan(*d.scratch_poison)) << name;
    b->set_scratch_poison(std::nullopt);
    EXPECT_FALSE(b->describe().scratch_poison.has_value()) << name;
  }
}

TEST(O1_BackendDescribes, CpuReportsTheOptionsItRuns) {
  auto b = make_backend("cpu", test::tiny(), BackendOptions{"portable", 3});
  const BackendDescription d = b->describe();
  EXPECT_EQ(d.isa, "portable");
  EXPECT_EQ(d.threads, 3);
  EXPECT_EQ(describe_isa_threads(d), "portable, 3 threads");
  EXPECT_EQ(describe_isa_threads(make_backend("reference", test::tiny())->describe()), "scalar, 1 thread");
}
