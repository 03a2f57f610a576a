#include "verify/check/property.hpp"

namespace akv::check {

Report check_property(const std::string& id, const std::function<void()>& body) {
  RcProperty p;  // RapidCheck's configured parameters, listener and replay map
  p.id = p.description = id;
  const RcResult result = run_rc(p, body);
  Report r;
  r.expect(result.passed, result.message, id);
  if (result.passed)
    r.expect(result.cases >= kMinCases,
             "ran " + std::to_string(result.cases) + " cases, fewer than " + std::to_string(kMinCases), id);
  return r;
}

}  // namespace akv::check
