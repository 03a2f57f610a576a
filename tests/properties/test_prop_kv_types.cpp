// E1, E3 and I1 within a cache type (spec/state.md S5-S8; verify/props/props_kv_types.cpp): the
// f32 properties again on sessions whose caches are f16 or q8_0, each case drawing its type.
// Their own binary (akv_prop_kv_tests): scripts/test runs one property per clause on the cpu
// backend (label property); the rest, and the reference and cuda-emu backends, are label sweep
// (tests/properties/CMakeLists.txt; docs/properties.md gives the times).
#include "tests/properties/prop_support.hpp"

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
