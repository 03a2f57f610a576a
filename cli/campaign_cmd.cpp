// akv campaign [--cases N] [--seed S] [--backend NAME] [--profile ci|long|real] [--property ID]...
//              [--out DIR]
// Runs the property suite (verify/props, spec/properties.md) for a chosen number of cases,
// printing progress and a summary. A failure prints RapidCheck's counterexample, the
// RC_PARAMS reproduce string, and writes the shrunk case as a conversation file that
// `akv witness` re-runs. Exit 0 every property passed, 1 one failed, 2 bad input.
#include <chrono>
#include <fmt/format.h>
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "cli/options.hpp"
#include "reference/error.hpp"
#include "verify/backends.hpp"
#include "verify/gen/profile.hpp"
#include "verify/props/counterexample.hpp"
#include "verify/props/harness.hpp"

namespace akv::cli {

namespace {
struct CampaignArgs {
  int cases = 1000;
  uint64_t seed = 0;
  bool seed_set = false;
  std::string backend = "reference";
  std::string profile = "ci";
  std::vector<std::string> properties;
  std::string out = "counterexamples";
};

// Prints "  <id>: k/N cases" about twenty times per property, and shrinking steps.
class Progress final : public rc::detail::TestListener {
 public:
  Progress(std::string id, int total) : id_(std::move(id)), total_(total), step_(std::max(1, total / 20)) {}
  void onTestCaseFinished(const rc::detail::CaseDescription& d) override {
    if (d.result.type != rc::detail::CaseResult::Type::Success) return;
    if (++done_ % step_ == 0 || done_ == total_) std::cout << fmt::format("  {}: {}/{} cases\n", id_, done_, total_) << std::flush;
  }
  void onShrinkTried(const rc::detail::CaseDescription&, bool accepted) override {
    if (accepted && ++shrinks_ % 10 == 1) std::cout << fmt::format("  {}: shrinking ({} steps)\n", id_, shrinks_) << std::flush;
  }
  void onTestFinished(const rc::detail::TestMetadata&, const rc::detail::TestResult&) override {}

 private:
  std::string id_;
  int total_, step_, done_ = 0, shrinks_ = 0;
};

std::vector<const prop::PropertyDef*> select(const std::vector<std::string>& wanted) {
  std::vector<const prop::PropertyDef*> out;
  for (const prop::PropertyDef& p : prop::properties()) {
    bool take = wanted.empty();
    for (const std::string& w : wanted) take = take || p.id() == w || p.suite == w || p.id().find(w) != std::string::npos;
    if (take) out.push_back(&p);
  }
  if (out.empty()) {
    std::string known;
    for (const prop::PropertyDef& p : prop::properties()) known += "\n  " + p.id();
    throw Error(ErrorCode::kBadInput, "--property: no property matches; the properties are:" + known);
  }
  return out;
}

int run_campaign_cmd(const CampaignArgs& a) {
  if (a.cases < 1) throw Error(ErrorCode::kBadInput, "--cases must be >= 1");
  const auto names = backend_names();
  if (std::find(names.begin(), names.end(), a.backend) == names.end()) make_backend(a.backend, nullptr);  // throws, naming them
  prop::Context ctx;
  ctx.backend = a.backend;
  ctx.profile = gen::profile_by_name(a.profile);
  const auto chosen = select(a.properties);

  rc::detail::TestParams params = rc::detail::configuration().testParams;
  params.maxSuccess = a.cases;
  if (a.seed_set) params.seed = a.seed;
  std::cout << fmt::format("akv campaign: {} properties x {} cases, backend {}, profile {}, seed {}\n", chosen.size(), a.cases,
                           a.backend, a.profile, params.seed);
  struct Row {
    std::string id;
    bool passed;
    int cases;
    double s;
  };
  std::vector<Row> rows;
  int failed = 0;
  for (const prop::PropertyDef* p : chosen) {
    const auto t0 = std::chrono::steady_clock::now();
    Progress progress(p->id(), a.cases);
    const prop::Outcome o = prop::run_property(*p, ctx, params, &progress);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    rows.push_back({p->id(), o.passed, o.cases, s});
    std::cout << fmt::format("{} {} ({:.1f} s): {}\n", o.passed ? "PASS" : "FAIL", p->id(), s, o.message);
    if (o.passed) continue;
    ++failed;
    if (!o.reproduce.empty())
      std::cout << fmt::format("  reproduce: RC_PARAMS=\"{}\" akv campaign --backend {} --profile {} --property {}\n", o.reproduce,
                               a.backend, a.profile, p->id());
    if (o.counterexample) {
      const prop::CounterexampleFile f = prop::counterexample_file(*o.counterexample, p->id(), a.backend, o.reproduce);
      const std::string path = prop::write_counterexample(a.out, p->id() + "." + a.backend + ".json", f);
      std::cout << "  counterexample: " << path << "\n";
      if (f.witness_applies) std::cout << "  re-run: akv witness " << path << " " << f.witness_args << "\n";
      else std::cout << "  (no eviction with a survivor in this case: re-run it with the reproduce string)\n";
    }
  }
  std::cout << "\nsummary:\n";
  for (const Row& r : rows) std::cout << fmt::format("  {}  {:<58} {:>7} cases {:>8.1f} s\n", r.passed ? "PASS" : "FAIL", r.id, r.cases, r.s);
  std::cout << fmt::format("{} of {} properties passed\n", rows.size() - failed, rows.size());
  return failed ? 1 : 0;
}
}  // namespace

Command add_campaign(CLI::App& app) {
  auto a = std::make_shared<CampaignArgs>();
  auto* c = app.add_subcommand("campaign", "Run the property suite for many cases; shrink and save any counterexample");
  c->add_option("--cases", a->cases, "Successful cases per property")->capture_default_str()->check(decimal(1, 1000000000));
  c->add_option("--seed", a->seed, "RapidCheck seed (default: RC_PARAMS seed, else random)")
      ->check(decimal(0, UINT64_MAX))
      ->each([a](const std::string&) { a->seed_set = true; });
  c->add_option("--backend", a->backend, "Backend to test: " + names_help(known_backend_names()) + " (in this build and on this machine: " + names_help(backend_names()) + ")")->capture_default_str()->check(nonempty());
  c->add_option("--profile", a->profile, "Generator profile: ci | long (reaches the model's context) | real (SmolLM2-135M-Instruct)")
      ->capture_default_str()
      ->check(nonempty());
  c->add_option("--property", a->properties, "Property id, suite or substring (repeatable; default: all)")->check(nonempty());
  c->add_option("--out", a->out, "Directory for counterexample files")->capture_default_str()->check(nonempty());
  return {c, [a] { return run_campaign_cmd(*a); }};
}

}  // namespace akv::cli
