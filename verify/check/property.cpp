#include "verify/check/property.hpp"

namespace akv::check {

Report check_property(const std::string& id, const std::function<void()>& body) {
  const RcResult result = run_rc(RcProperty{.id = id, .description = id, .params = default_params(), .listener = nullptr, .replay = nullptr, .around = {}}, body);
  Report r;
  r.expect(result.passed, result.message, id);
  if (result.passed)
    r.expect(result.cases >= kMinCases,
             "ran " + std::to_string(result.cases) + " cases, fewer than " + std::to_string(kMinCases), id);
  return r;
}

}  // namespace akv::check
