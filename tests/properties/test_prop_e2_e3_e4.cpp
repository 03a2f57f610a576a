// E2, E3, E4 properties (spec/properties.md): the poison control, prefix untouched, cost.
#include "tests/properties/prop_support.hpp"

AKV_PROPERTY_SUITE(E2_PropPoisonMovesLogits);
AKV_PROPERTY(E2_PropPoisonMovesLogits, DefaultWeights)
AKV_PROPERTY(E2_PropPoisonMovesLogits, DrawnWeights)
AKV_PROPERTY(E2_PropPoisonMovesLogits, RealConversations)

AKV_PROPERTY_SUITE(E3_PropPrefixUntouched);
AKV_PROPERTY(E3_PropPrefixUntouched, PrefixBytesAndWrites)

AKV_PROPERTY_SUITE(E4_PropCostIsSurvivors);
AKV_PROPERTY(E4_PropCostIsSurvivors, RecomputedEqualsX)
