#include "verify/check/property.hpp"

#include <rapidcheck.h>

#include <cstdlib>
#include <sstream>

// librapidcheck's listener that prints the reproduce string at exit (not declared in its
// public headers; verify/props/harness.cpp uses it the same way).
namespace rc::detail {
TestListener& globalTestListener();
}  // namespace rc::detail

namespace akv::check {

Report check_property(const std::string& id, const std::function<void()>& body) {
  rc::detail::TestParams params = rc::detail::configuration().testParams;
  const char* env = std::getenv("RC_PARAMS");
  if (!(env && std::string(env).find("max_success") != std::string::npos) && params.maxSuccess < kMinCases)
    params.maxSuccess = kMinCases;
  rc::detail::TestMetadata meta;
  meta.id = id;
  meta.description = id;
  const auto result = rc::detail::checkProperty(rc::detail::toProperty([&] { body(); }), meta, params,
                                                rc::detail::globalTestListener(), rc::detail::configuration().reproduce);
  std::ostringstream msg;
  rc::detail::printResultMessage(result, msg);
  Report r;
  const bool ok = result.is<rc::detail::SuccessResult>();
  r.expect(ok, msg.str(), id);
  if (ok) {
    const int cases = result.get<rc::detail::SuccessResult>().numSuccess;
    r.expect(cases >= kMinCases, "ran " + std::to_string(cases) + " cases, fewer than " + std::to_string(kMinCases), id);
  }
  return r;
}

}  // namespace akv::check
