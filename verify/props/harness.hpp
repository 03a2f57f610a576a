// The property registry and runner shared by the GoogleTest suite (tests/properties/) and
// `akv campaign` (spec/properties.md): each property is defined once, run by either.
#pragma once
#include <rapidcheck.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "reference/backend.hpp"
#include "verify/check/rc_runner.hpp"
#include "verify/gen/case.hpp"
#include "verify/gen/profile.hpp"
#include "verify/props/fixture.hpp"

namespace akv::prop {

/// What a property runs against: a backend by name and a generator profile. `factory`,
/// when set, makes the backends instead of runtime/backends.hpp (the suite's own tests use
/// it to run the properties against deliberately broken backends). `knobs`, when set, says
/// what each case draws for its backends in place of backend_knobs(backend).
struct Context {
  std::string backend = "reference";
  gen::Profile profile = gen::ci_profile();
  BackendFactory factory;
  std::optional<gen::BackendKnobs> knobs;
  /// Cache types a case draws (spec/state.md S5; model_choice_typed); empty: every session f32.
  std::vector<KvType> kv_types;
};

/// A generated case in the form `akv witness` re-runs: conversation, spans to evict (indexes,
/// possibly of empty spans), model; `note` says what was compared (e.g. a command log);
/// `backends`: the options of the backends the case made (the harness fills it).
struct Counterexample {
  gen::ModelChoice model;
  gen::GenConversation conv;
  std::vector<size_t> evict;
  std::string note;
  std::vector<gen::BackendDraw> backends;
};

/// Called by a property body once its case is drawn (again when it changes); the last one
/// noted in a failing run becomes that run's counterexample. After shrinking the last
/// failing run is the minimal one.
void note_case(Counterexample c);

/// One property: GoogleTest suite name (starts with the clause id and '_'), test name,
/// one-line summary, and the body (RapidCheck assertions; draws with `*gen`).
struct PropertyDef {
  std::string suite;
  std::string name;
  std::string summary;
  std::function<void(const Context&)> body;
  /// "Suite.Name".
  std::string id() const { return suite + "." + name; }
};

/// Every property, in a stable order.
const std::vector<PropertyDef>& properties();

/// The property with id "Suite.Name", or nullptr.
const PropertyDef* find_property(const std::string& id);

/// The result of running one property: the runner's (check::RcResult) and the case the body
/// noted last in the shrunk failing run.
struct Outcome : check::RcResult {
  std::optional<Counterexample> counterexample;
};

/// The RapidCheck id of `p` on `backend`: "Suite/Name/backend" (keys RC_PARAMS reproduce=).
std::string rc_id(const PropertyDef& p, const std::string& backend);

/// The test parameters of the suite: RapidCheck's configuration (RC_PARAMS), with at least
/// 200 cases unless RC_PARAMS sets max_success itself.
using check::default_params;

/// Runs `p` under `ctx` with `params`, reporting each case to `listener` (null: RapidCheck's
/// global listener, which prints the reproduce string at exit). RC_PARAMS reproduce= entries
/// for rc_id(p, ctx.backend) replay a recorded failure.
/// `reproduce` (the text after "reproduce=" of an Outcome's reproduce string), when given,
/// replaces RC_PARAMS' reproduce map.
Outcome run_property(const PropertyDef& p, const Context& ctx, const rc::detail::TestParams& params,
                     rc::detail::TestListener* listener = nullptr, const std::string& reproduce = "");

}  // namespace akv::prop
