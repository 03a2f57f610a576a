// akv leakage FILE... [--policies keep,mask,kshift,exact] [--model M] [--seed S] [--backend NAME]
//                     [--isa ISA] [--threads N] [--evict N[,M...]] [--tokens N] [--no-positions]
//                     [--secret STRING...] [--json] [--out DIR]
// What approximate eviction leaks (spec/leakage.md L9). A progress line per conversation on
// stderr; the Markdown table (or --json) on stdout; --out DIR also writes leakage.md,
// leakage.json and leakage.svg there. Exit 0 measured and exact leaked nothing (L5), 1 exact
// leaked, 2 bad input (nothing measured, nothing written).
#include <chrono>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "cli/options.hpp"
#include "cli/shared_options.hpp"
#include "readers/conversation/chat_parse.hpp"
#include "reference/error.hpp"
#include "runtime/backends.hpp"
#include "leakage/leakage.hpp"
#include "leakage/leakage_report.hpp"
#include "runtime/models.hpp"

namespace akv::cli {

namespace {
struct LeakageArgs {
  std::vector<std::string> files;
  std::string policies = "keep,mask,kshift,exact";
  std::string evict;
  std::string out;
  bool json = false;
  bool no_positions = false;
  LeakageOptions opt;
};

void write_file(const std::filesystem::path& p, const std::string& text) {
  std::ofstream f(p, std::ios::binary);
  f << text;
  if (!f.flush()) throw Error(ErrorCode::kBadInput, "--out: cannot write " + p.string());
}

int run_leakage_cmd(const LeakageArgs& a) {
  // Everything that can be refused is checked before any work (nothing written on exit 2).
  LeakageOptions opt = a.opt;
  opt.policies = parse_policies(a.policies);
  opt.positions = !a.no_positions;
  if (!a.evict.empty()) opt.evict = index_list("--evict", a.evict);
  std::vector<std::pair<std::string, Conversation>> convs;
  std::string skipped;  // said once there is something to measure
  for (const std::string& f : a.files) {
    Conversation c = load_conversation(f);
    if (opt.evict.empty() && c.poisoned.empty()) {
      skipped += fmt::format("akv leakage: skipping {}: no \"poisoned\" list (a clean conversation)\n", f);
      continue;
    }
    convs.emplace_back(f, std::move(c));
  }
  if (convs.empty())
    throw Error(ErrorCode::kBadInput, "nothing to measure: no conversation has a \"poisoned\" list; name messages with --evict");
  std::cerr << skipped;
  if (!a.out.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(a.out, ec);
    if (ec || !std::filesystem::is_directory(a.out)) throw Error(ErrorCode::kBadInput, "--out: cannot create directory " + a.out);
  }

  std::vector<LeakageReport> reports;
  for (size_t i = 0; i < convs.size(); ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    LeakageReport r = run_leakage(convs[i].second, convs[i].first, opt);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::string kls;
    for (const PolicyResult& p : r.policies) kls += fmt::format(" {}={:.3g}", policy_name(p.policy), p.kl);
    std::cerr << fmt::format("[{}/{}] {}: {} tokens, evicted {} tokens; KL{}; {:.1f} s\n", i + 1, convs.size(), convs[i].first,
                             r.tokens_poisoned, r.tokens_poisoned - r.tokens_never, kls, s);
    reports.push_back(std::move(r));
  }
  bool ok = true;
  nlohmann::json arr = nlohmann::json::array();
  for (const LeakageReport& r : reports) {
    ok = ok && r.exact_ok();
    arr.push_back(to_json(r));
  }
  const nlohmann::json j = {{"exact_ok", ok}, {"reports", arr}};
  const std::string md = to_markdown(reports);
  if (!a.out.empty()) {
    const std::filesystem::path dir(a.out);
    write_file(dir / "leakage.md", md);
    write_file(dir / "leakage.json", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
    write_file(dir / "leakage.svg", kl_svg(reports));
  }
  if (a.json)
    print_json(j);
  else
    std::cout << md << std::flush;
  if (!ok) std::cerr << "akv leakage: FAIL: exact eviction differs from never-shown (L5)\n";
  return ok ? 0 : 1;
}
}  // namespace

Command add_leakage(CLI::App& app) {
  auto a = std::make_shared<LeakageArgs>();
  auto* w = app.add_subcommand("leakage", "Measure what keep / mask / kshift eviction leaks against never-shown, beside exact");
  w->add_option("FILE", a->files, "Conversations: OpenAI chat JSON with a \"poisoned\" list")->required()->check(nonempty());
  w->add_option("--policies", a->policies, "Comma-separated, from: " + names_help(policy_names()))->capture_default_str()->check(nonempty());
  w->add_option("--evict", a->evict, "Message indexes to evict (comma-separated) instead of each \"poisoned\" list")->check(nonempty());
  add_model_option(w, a->opt.model);
  w->add_option("--seed", a->opt.seed, "Weight seed (synthetic models)")->capture_default_str()->check(decimal(0, UINT64_MAX));
  add_backend_options(w, a->opt.backend, a->opt.backend_options);
  w->add_option("--tokens", a->opt.continuation, "Greedy continuation length")->capture_default_str()->check(decimal(1, 4096));
  w->add_option("--secret", a->opt.secrets,
                "A string to search every continuation for (an expired API key); reported as \"secret N\", never repeated "
                "(repeatable; spec/leakage.md L10)")
      ->check(nonempty());
  w->add_flag("--no-positions", a->no_positions, "Skip the cost of evicting the start, middle and end message");
  w->add_flag("--json", a->json, "Print one JSON object instead of the Markdown table");
  w->add_option("--out", a->out, "Also write leakage.md, leakage.json, leakage.svg to this directory")->check(nonempty());
  return {w, [a] { return run_leakage_cmd(*a); }};
}

}  // namespace akv::cli
