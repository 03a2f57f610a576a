#include "verify/check/rc_runner.hpp"

#include <cstdlib>
#include <sstream>

// Three functions of librapidcheck that its public headers do not declare (rapidcheck
// src/detail/DefaultTestListener.h, ReproduceListener / Configuration): the listener that
// prints the reproduce string at exit, and the encoder and decoder of that string.
namespace rc::detail {
TestListener& globalTestListener();
std::string reproduceMapToString(const std::unordered_map<std::string, Reproduce>& reproduceMap);
std::unordered_map<std::string, Reproduce> stringToReproduceMap(const std::string& str);
}  // namespace rc::detail

namespace akv::check {

namespace {

class Quiet final : public rc::detail::TestListener {
 public:
  void onTestCaseFinished(const rc::detail::CaseDescription&) override {}
  void onShrinkTried(const rc::detail::CaseDescription&, bool) override {}
  void onTestFinished(const rc::detail::TestMetadata&, const rc::detail::TestResult&) override {}
};

}  // namespace

rc::detail::TestParams default_params() {
  rc::detail::TestParams params = rc::detail::configuration().testParams;
  const char* env = std::getenv("RC_PARAMS");
  if (!(env && std::string(env).find("max_success") != std::string::npos) && params.maxSuccess < kMinCases)
    params.maxSuccess = kMinCases;
  return params;
}

const ReproduceMap& configured_replay() { return rc::detail::configuration().reproduce; }

ReproduceMap parse_reproduce(const std::string& text) { return rc::detail::stringToReproduceMap(text); }

rc::detail::TestListener& quiet_listener() {
  static Quiet quiet;
  return quiet;
}

RcResult run_rc(const RcProperty& p, const std::function<void()>& body) {
  auto testable = [&] {
    if (p.around)
      p.around(body);
    else
      body();
  };
  rc::detail::TestMetadata meta;
  meta.id = p.id;
  meta.description = p.description;
  rc::detail::TestListener& listener = p.listener ? *p.listener : rc::detail::globalTestListener();
  const ReproduceMap& replay = p.replay ? *p.replay : configured_replay();
  const rc::detail::TestResult result = rc::detail::checkProperty(rc::detail::toProperty(testable), meta, p.params, listener, replay);
  RcResult r;
  std::ostringstream msg;
  rc::detail::printResultMessage(result, msg);
  r.message = msg.str();
  if (result.is<rc::detail::SuccessResult>()) {
    r.passed = true;
    r.cases = result.get<rc::detail::SuccessResult>().numSuccess;
  } else if (result.is<rc::detail::FailureResult>()) {
    const auto& f = result.get<rc::detail::FailureResult>();
    r.failed = true;
    r.cases = f.numSuccess;
    r.description = f.description;
    r.failing = {{p.id, f.reproduce}};
    r.reproduce = "reproduce=" + rc::detail::reproduceMapToString(r.failing);
  } else if (result.is<rc::detail::GaveUpResult>()) {
    r.gave_up = true;
    r.cases = result.get<rc::detail::GaveUpResult>().numSuccess;
  }
  return r;
}

}  // namespace akv::check
