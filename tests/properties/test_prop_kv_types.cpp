// E1, E3 and I1 within a cache type (spec/state.md S5-S8; verify/props/props_kv_types.cpp): the
// f32 properties again on sessions whose caches are f16 or q8_0, each case drawing its type.
// Their own binary (akv_prop_kv_tests): scripts/test runs one property per clause on the cpu
// backend (label property); the rest, and the reference and cuda-emu backends, are label sweep
// (tests/properties/CMakeLists.txt; docs/properties.md gives the times).
#include <string>

#include "tests/properties/prop_support.hpp"
#include "verify/props/harness.hpp"

AKV_PROPERTY_SUITE(E1_PropKvTypes);
AKV_PROPERTY(E1_PropKvTypes, Requests)
AKV_PROPERTY(E1_PropKvTypes, OneAtATimeAnyOrder)
AKV_PROPERTY(E1_PropKvTypes, CommandSequences)

AKV_PROPERTY_SUITE(E3_PropKvTypes);
AKV_PROPERTY(E3_PropKvTypes, PrefixBytesAndWrites)

AKV_PROPERTY_SUITE(I1_PropKvTypes);
AKV_PROPERTY(I1_PropKvTypes, Chunkings)
AKV_PROPERTY(I1_PropKvTypes, PoisonedScratch)
AKV_PROPERTY(I1_PropKvTypes, EarlierWork)

namespace akv::test {
namespace {
// Every property within a cache type has its TEST_P here (the f32 ones: test_prop_teeth.cpp).
TEST(E1_PropRegistry, EveryCacheTypePropertyHasItsTest) {
  const auto* unit = ::testing::UnitTest::GetInstance();
  size_t typed = 0;
  for (const prop::PropertyDef& p : prop::properties()) {
    if (p.suite.size() < 12 || p.suite.compare(p.suite.size() - 12, 12, "_PropKvTypes") != 0) continue;
    ++typed;
    bool found = false;
    for (int i = 0; i < unit->total_test_suite_count(); ++i) {
      const auto* s = unit->GetTestSuite(i);
      if (std::string(s->name()) != "Backends/" + p.suite) continue;
      for (int j = 0; j < s->total_test_count(); ++j) found = found || std::string(s->GetTestInfo(j)->name()).rfind(p.name + "/", 0) == 0;
    }
    EXPECT_TRUE(found) << p.id() << " has no TEST_P in tests/properties/test_prop_kv_types.cpp";
  }
  EXPECT_GT(typed, 0u);
}
}  // namespace
}  // namespace akv::test
