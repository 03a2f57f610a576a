// Each property file adds its properties here; harness.cpp lists them all (explicit calls,
// not static registration, so a static library keeps every one).
#pragma once
#include <vector>

#include "verify/props/harness.hpp"

namespace akv::prop {

void add_i1_properties(std::vector<PropertyDef>& v);          // props_i1.cpp
void add_e1_properties(std::vector<PropertyDef>& v);          // props_e1.cpp
void add_e2_properties(std::vector<PropertyDef>& v);          // props_e2.cpp
void add_e3_e4_properties(std::vector<PropertyDef>& v);       // props_e3_e4.cpp
void add_error_properties(std::vector<PropertyDef>& v);       // props_errors.cpp
void add_regression_properties(std::vector<PropertyDef>& v);  // props_regressions.cpp
void add_stateful_properties(std::vector<PropertyDef>& v);    // props_stateful.cpp
void add_kv_type_properties(std::vector<PropertyDef>& v);     // props_kv_types.cpp: after the others

}  // namespace akv::prop
