#include "verify/props/harness.hpp"

#include <cstdlib>
#include <sstream>

#include "verify/gen/gen.hpp"
#include "verify/props/fixture.hpp"
#include "verify/props/registry.hpp"

// Two functions of librapidcheck that its public headers do not declare (rapidcheck
// src/detail/DefaultTestListener.h and ReproduceListener / Configuration): the listener that
// prints the reproduce string at exit, and the encoder of that string.
namespace rc::detail {
TestListener& globalTestListener();
std::string reproduceMapToString(const std::unordered_map<std::string, Reproduce>& reproduceMap);
std::unordered_map<std::string, Reproduce> stringToReproduceMap(const std::string& str);
}  // namespace rc::detail

namespace akv::prop {

namespace {
thread_local std::optional<Counterexample> g_pending;
thread_local std::optional<Counterexample> g_failed;
}  // namespace

void note_case(Counterexample c) { g_pending = std::move(c); }

const std::vector<PropertyDef>& properties() {
  static const std::vector<PropertyDef> all = [] {
    std::vector<PropertyDef> v;
    add_i1_properties(v);
    add_e1_properties(v);
    add_e2_properties(v);
    add_e3_e4_properties(v);
    add_error_properties(v);
    add_regression_properties(v);
    add_stateful_properties(v);
    return v;
  }();
  return all;
}

const PropertyDef* find_property(const std::string& id) {
  for (const PropertyDef& p : properties())
    if (p.id() == id) return &p;
  return nullptr;
}

std::string rc_id(const PropertyDef& p, const std::string& backend) { return p.suite + "/" + p.name + "/" + backend; }

rc::detail::TestParams default_params() {
  rc::detail::TestParams params = rc::detail::configuration().testParams;
  const char* env = std::getenv("RC_PARAMS");
  if (!(env && std::string(env).find("max_success") != std::string::npos) && params.maxSuccess < 200) params.maxSuccess = 200;
  return params;
}

Outcome run_property(const PropertyDef& p, const Context& ctx, const rc::detail::TestParams& params,
                     rc::detail::TestListener* listener, const std::string& reproduce) {
  g_failed.reset();
  set_backend_factory(ctx.factory);
  const gen::BackendKnobs knobs = ctx.knobs ? *ctx.knobs : backend_knobs(ctx.backend);
  auto testable = [&p, &ctx, &knobs]() {
    g_pending.reset();
    // Every case draws its backends' threads, ISA and scratch first (spec/properties.md).
    use_backend_draws(*gen::backend_draws(ctx.profile, knobs));
    const auto failed = [] {
      g_failed = g_pending;
      if (g_failed) g_failed->backends = used_backend_draws();
    };
    try {
      p.body(ctx);
    } catch (const rc::detail::CaseResult& r) {
      if (r.type == rc::detail::CaseResult::Type::Failure) failed();
      throw;
    } catch (const rc::GenerationFailure&) {
      throw;
    } catch (...) {
      failed();
      throw;
    }
  };
  rc::detail::TestMetadata meta;
  meta.id = rc_id(p, ctx.backend);
  meta.description = p.summary;
  rc::detail::TestListener& l = listener ? *listener : rc::detail::globalTestListener();
  const auto replay = reproduce.empty() ? rc::detail::configuration().reproduce : rc::detail::stringToReproduceMap(reproduce);
  const rc::detail::TestResult result = rc::detail::checkProperty(rc::detail::toProperty(testable), meta, params, l, replay);
  set_backend_factory(nullptr);
  use_backend_draws({});
  Outcome o;
  std::ostringstream msg;
  rc::detail::printResultMessage(result, msg);
  o.message = msg.str();
  if (result.is<rc::detail::SuccessResult>()) {
    o.passed = true;
    o.cases = result.get<rc::detail::SuccessResult>().numSuccess;
  } else if (result.is<rc::detail::FailureResult>()) {
    const auto& f = result.get<rc::detail::FailureResult>();
    o.cases = f.numSuccess;
    o.reproduce = "reproduce=" + rc::detail::reproduceMapToString({{meta.id, f.reproduce}});
    o.counterexample = g_failed;
  } else if (result.is<rc::detail::GaveUpResult>()) {
    o.gave_up = true;
    o.cases = result.get<rc::detail::GaveUpResult>().numSuccess;
  }
  return o;
}

}  // namespace akv::prop
