#include "verify/props/harness.hpp"

#include "verify/gen/gen.hpp"
#include "verify/props/fixture.hpp"
#include "verify/props/registry.hpp"

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
    add_kv_type_properties(v);  // last: it wraps properties added above
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

Outcome run_property(const PropertyDef& p, const Context& ctx, const rc::detail::TestParams& params,
                     rc::detail::TestListener* listener, const std::string& reproduce) {
  g_failed.reset();
  set_backend_factory(ctx.factory);
  const gen::BackendKnobs knobs = ctx.knobs ? *ctx.knobs : backend_knobs(ctx.backend);
  auto testable = [&p, &ctx, &knobs]() {
    g_pending.reset();
    // Every case draws its backends' threads, ISA and scratch first (spec/properties.md).
    use_backend_draws(*gen::backend_draws(ctx.profile, knobs));
    check::on_case_failure([&] { p.body(ctx); }, [] {
      g_failed = g_pending;
      if (g_failed) g_failed->backends = used_backend_draws();
    });
  };
  const check::ReproduceMap replay = reproduce.empty() ? check::configured_replay() : check::parse_reproduce(reproduce);
  Outcome o;
  static_cast<check::RcResult&>(o) = check::run_rc(
      check::RcProperty{.id = rc_id(p, ctx.backend), .description = p.summary, .params = params, .listener = listener, .replay = &replay, .around = {}},
      testable);
  set_backend_factory(nullptr);
  use_backend_draws({});
  if (o.failed) o.counterexample = g_failed;
  return o;
}

}  // namespace akv::prop
