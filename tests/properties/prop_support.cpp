#include "tests/properties/prop_support.hpp"

#include <cstdlib>
#include <iostream>

#include "verify/gen/profile.hpp"
#include "verify/props/counterexample.hpp"
#include "verify/props/harness.hpp"

namespace akv::test {

void check_property(const std::string& id, const std::string& backend) {
  const prop::PropertyDef* p = prop::find_property(id);
  ASSERT_NE(p, nullptr) << "no property " << id << " in verify/props";
  prop::Context ctx;
  ctx.backend = backend;
  if (const char* prof = std::getenv("AKV_PROFILE")) ctx.profile = gen::profile_by_name(prof);
  const prop::Outcome o = prop::run_property(*p, ctx, prop::default_params());
  std::cout << id << " on " << backend << ": " << o.message << std::endl;
  if (o.passed) return;
  std::string extra;
  if (!o.reproduce.empty()) extra += "reproduce with: RC_PARAMS=\"" + o.reproduce + "\"\n";
  if (o.counterexample) {
    const prop::CounterexampleFile f = prop::counterexample_file(*o.counterexample, id, backend, o.reproduce);
    if (const char* dir = std::getenv("AKV_COUNTEREXAMPLE_DIR")) {
      const std::string path = prop::write_counterexample(dir, id + "." + backend + ".json", f);
      extra += "counterexample written to " + path + "\n";
      if (f.witness_applies) extra += "re-run: akv witness " + path + " " + f.witness_args + "\n";
    }
  }
  FAIL() << o.message << "\n" << extra;
}

}  // namespace akv::test
