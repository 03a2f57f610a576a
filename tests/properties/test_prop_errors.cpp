// Error properties (spec/properties.md): invalid operations leave the session unchanged.
#include "tests/properties/prop_support.hpp"

AKV_PROPERTY_SUITE(O6_PropErrorsLeaveStateUnchanged);
AKV_PROPERTY(O6_PropErrorsLeaveStateUnchanged, InvalidOperations)
