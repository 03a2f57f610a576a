// E1 properties (spec/properties.md): evict = never for every request shape, in any order,
// for any sequence of commands, and the fixed patterns from other engines' bug reports.
#include "tests/properties/prop_support.hpp"

AKV_PROPERTY_SUITE(E1_PropEvictEqualsNever);
AKV_PROPERTY(E1_PropEvictEqualsNever, Requests)
AKV_PROPERTY(E1_PropEvictEqualsNever, RealConversations)
AKV_PROPERTY(E1_PropEvictEqualsNever, OneAtATimeAnyOrder)

AKV_PROPERTY_SUITE(E1_PropStateMachine);
AKV_PROPERTY(E1_PropStateMachine, CommandSequences)

AKV_PROPERTY_SUITE(E1_PropRegression);
AKV_PROPERTY(E1_PropRegression, TwoEvictionsBeforeAppendCompose)
AKV_PROPERTY(E1_PropRegression, TwoInteriorRemovals)
