#include "campaign/run.hpp"

#include <fmt/format.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>

#include "reference/error.hpp"
#include "runtime/backends.hpp"
#include "verify/gen/profile.hpp"
#include "verify/props/counterexample.hpp"
#include "runtime/build_info.hpp"

namespace akv::campaign {

namespace {

// Prints "  <id>: k/N cases" about twenty times per property, and shrinking steps.
class Progress final : public rc::detail::TestListener {
 public:
  Progress(std::ostream& log, std::string id, int total)
      : log_(log), id_(std::move(id)), total_(total), step_(std::max(1, total / 20)) {}
  void onTestCaseFinished(const rc::detail::CaseDescription& d) override {
    if (d.result.type != rc::detail::CaseResult::Type::Success) return;
    if (++done_ % step_ == 0 || done_ == total_) log_ << fmt::format("  {}: {}/{} cases\n", id_, done_, total_) << std::flush;
  }
  void onShrinkTried(const rc::detail::CaseDescription&, bool accepted) override {
    if (accepted && ++shrinks_ % 10 == 1) log_ << fmt::format("  {}: shrinking ({} steps)\n", id_, shrinks_) << std::flush;
  }
  void onTestFinished(const rc::detail::TestMetadata&, const rc::detail::TestResult&) override {}

 private:
  std::ostream& log_;
  std::string id_;
  int total_, step_, done_ = 0, shrinks_ = 0;
};

// Process CPU time, every thread, user + system (the cost a team sizes its array by).
double cpu_seconds() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + 1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

std::vector<const prop::PropertyDef*> select_properties(const std::vector<std::string>& wanted) {
  std::vector<const prop::PropertyDef*> out;
  for (const prop::PropertyDef& p : prop::properties()) {
    bool take = wanted.empty();
    for (const std::string& w : wanted) take = take || p.id() == w || p.suite == w || p.id().find(w) != std::string::npos;
    if (take) out.push_back(&p);
  }
  if (out.empty()) {
    std::string asked, known;
    for (const std::string& w : wanted) asked += (asked.empty() ? "'" : ", '") + w + "'";
    for (const prop::PropertyDef& p : prop::properties()) known += (known.empty() ? "" : ", ") + p.id();
    throw Error(ErrorCode::kBadInput, "--property " + asked + ": no property matches; the properties are: " + known);
  }
  return out;
}

ShardResult run_shard(const Plan& plan, prop::Context ctx, std::ostream& log, std::string* path) {
  const auto names = backend_names();
  if (std::find(names.begin(), names.end(), plan.backend) == names.end()) make_backend(plan.backend, nullptr);  // throws, naming them
  ctx.backend = plan.backend;
  ctx.profile = gen::profile_by_name(plan.profile);
  const auto chosen = select_properties(plan.properties);

  ShardResult r;
  r.campaign.seed = plan.seed;
  r.campaign.cases = plan.cases;
  r.campaign.shards = plan.shard.total;
  r.campaign.backend = plan.backend;
  r.campaign.profile = plan.profile;
  for (const prop::PropertyDef* p : chosen) r.campaign.properties.push_back(p->id());
  r.campaign.akv_version = akv_version();
  r.campaign.akv_commit = akv_commit();
  r.shard = plan.shard;
  r.seed = shard_seed(plan.seed, plan.shard);
  r.cases = shard_cases(plan.cases, plan.shard);
  if (!ctx.knobs) r.campaign.isas_drawn = prop::backend_knobs(plan.backend).isas;
  else r.campaign.isas_drawn = ctx.knobs->isas;

  rc::detail::TestParams params = rc::detail::configuration().testParams;
  params.maxSuccess = r.cases;
  params.seed = r.seed;
  r.campaign.max_size = params.maxSize;
  r.campaign.max_discard_ratio = params.maxDiscardRatio;
  r.campaign.disable_shrinking = params.disableShrinking;
  // Every shard's cases take every RapidCheck size (CP2); checked alike in every shard, from
  // the smallest share.
  if (plan.shard.total > 1 && plan.cases / plan.shard.total < min_shard_cases(params.maxSize))
    throw Error(ErrorCode::kBadInput,
                fmt::format("--cases {} over {} shards is {} cases a shard, fewer than RapidCheck's {} sizes (0..max_size {}): "
                            "a shard's cases would skip sizes an unsharded run takes; give --cases >= {}, or fewer shards",
                            plan.cases, plan.shard.total, plan.cases / plan.shard.total, min_shard_cases(params.maxSize),
                            params.maxSize, static_cast<int64_t>(plan.shard.total) * min_shard_cases(params.maxSize)));
  check_writable(plan.out, plan.shard);  // before any case runs: a bad --out is exit 2, nothing run
  fill_machine(r);
  r.started = utc_now();
  if (plan.shard.total == 1) {
    log << fmt::format("akv campaign: {} properties x {} cases, backend {}, profile {}, seed {}\n", chosen.size(), r.cases,
                       plan.backend, plan.profile, r.seed);
  } else {
    log << fmt::format("akv campaign: shard {}/{} (from {}): {} properties x {} of {} cases, backend {}, profile {}, seed {} "
                       "(the shard's seed {})\n",
                       plan.shard.index, plan.shard.total, plan.shard.source, chosen.size(), r.cases, plan.cases, plan.backend,
                       plan.profile, plan.seed, r.seed);
  }
  const std::string suffix = plan.shard.total == 1 ? "" : fmt::format(".shard-{}-of-{}", plan.shard.index, plan.shard.total);
  const auto t_all = std::chrono::steady_clock::now();
  const double cpu_all = cpu_seconds();
  for (const prop::PropertyDef* p : chosen) {
    const auto t0 = std::chrono::steady_clock::now();
    const double c0 = cpu_seconds();
    Progress progress(log, p->id(), r.cases);
    const prop::Outcome o = prop::run_property(*p, ctx, params, &progress);
    PropertyResult pr;
    pr.id = p->id();
    pr.wall_seconds = since(t0);
    pr.cpu_seconds = cpu_seconds() - c0;
    pr.passed = o.cases;
    pr.failed = o.passed || o.gave_up ? 0 : 1;
    pr.cases_run = pr.passed + pr.failed;
    pr.status = o.passed ? "passed" : o.gave_up ? "gave_up" : "failed";
    if (!o.passed) pr.message = o.message.substr(0, 8192);
    log << fmt::format("{} {} ({:.1f} s): {}\n", o.passed ? "PASS" : "FAIL", p->id(), pr.wall_seconds, o.message);
    if (!o.reproduce.empty()) {
      // Its own --out: replaying one case never overwrites the campaign's files.
      pr.reproduce = fmt::format("RC_PARAMS=\"{}\" akv campaign --backend {} --profile {} --property {} --out campaign-reproduce",
                                 o.reproduce, plan.backend, plan.profile, p->id());
      log << "  reproduce: " << pr.reproduce << "\n";
    }
    if (o.counterexample) {
      const prop::CounterexampleFile f = prop::counterexample_file(*o.counterexample, p->id(), plan.backend, o.reproduce);
      pr.counterexample = p->id() + "." + plan.backend + suffix + ".json";
      const std::string file = prop::write_counterexample(plan.out, pr.counterexample, f);
      log << "  counterexample: " << file << "\n";
      if (f.witness_applies) {
        pr.witness_args = f.witness_args;
        log << "  re-run: akv witness " << file << " " << f.witness_args << "\n";
      } else {
        log << "  (no eviction with a survivor in this case: re-run it with the reproduce string)\n";
      }
    }
    r.properties.push_back(std::move(pr));
  }
  r.wall_seconds = since(t_all);
  r.cpu_seconds = cpu_seconds() - cpu_all;
  r.finished = utc_now();
  const std::string file = write_shard_file(plan.out, r);
  if (path) *path = file;
  return r;
}

}  // namespace akv::campaign
