// An op counterexample as C (spec/gate.md GT5): a file a kernel author pastes into a unit test
// of their own library, with no akv to run.
#pragma once
#include <nlohmann/json.hpp>

#include <string>

namespace akv::gate {

/// The C source replaying the failed case `c` (an op property's noted case: "op", shape and
/// inputs) of `property`: the inputs as static const float arrays in hex (%a, exact), the calls
/// of the table's op and the comparison the property makes, memcmp for bitwise; the expected
/// bits of a bitwise-against-the-reference check (the reference's output, computed here) as an
/// array too. It defines `int akv_cx_<property>(const akv_kernels* t)`, 0 when the case holds,
/// 1 when it fails (printing the first differing element on stderr), 2 when the table lacks a
/// hook it needs; with -DAKV_CX_MAIN a main() calls it on akv_get_kernels(). "" for the bound
/// checks (GT3 *.bound: their exact values need GMP/MPFR; the JSON file holds the inputs) and
/// for a case with no inputs noted.
std::string c_snippet(const std::string& property, const std::string& summary, const std::string& message,
                      const std::string& reproduce, const nlohmann::json& c);

}  // namespace akv::gate
