// akv kv-cost FILE... [--types f16,q8_0] [--model M] [--seed S] [--backend B] [--isa I] [--threads N]
//                     [--tokens N] [--json] [--out DIR]
// What a cache type costs in accuracy against f32 (spec/leakage.md L11): per conversation and
// type, the next-token logits after the generation prompt and a greedy continuation. The
// Markdown table (or --json) on stdout; --out DIR also writes kv-cost.md and kv-cost.json.
// Exit 0 measured, 2 bad input (nothing measured, nothing written).
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "cli/commands.hpp"
#include "cli/options.hpp"
#include "cli/shared_options.hpp"
#include "leakage/kv_cost.hpp"
#include "readers/conversation/chat_parse.hpp"
#include "reference/error.hpp"

namespace akv::cli {

namespace {
struct KvCostArgs {
  std::vector<std::string> files;
  std::string types = "f16,q8_0";
  std::string out;
  bool json = false;
  KvCostOptions opt;
};

int run_kv_cost_cmd(const KvCostArgs& a) {
  KvCostOptions opt = a.opt;
  opt.types.clear();
  std::stringstream in(a.types);
  for (std::string t; std::getline(in, t, ',');) {
    const KvType k = parse_kv_type(t);
    if (k == KvType::kF32) throw Error(ErrorCode::kBadInput, "--types: f32 is what every type is compared with; name f16 or q8_0");
    opt.types.push_back(k);
  }
  if (opt.types.empty()) throw Error(ErrorCode::kBadInput, "--types: no type");
  std::vector<std::pair<std::string, Conversation>> convs;
  for (const std::string& f : a.files) convs.emplace_back(f, load_conversation(f));
  std::vector<KvCostReport> reports;
  nlohmann::json j = nlohmann::json::array();
  for (const auto& [f, c] : convs) {
    std::cerr << "akv kv-cost: " << f << "\n";
    reports.push_back(run_kv_cost(c, f, opt));
    j.push_back(to_json(reports.back()));
  }
  const std::string md = kv_cost_markdown(reports);
  if (!a.out.empty()) {
    std::filesystem::create_directories(a.out);
    std::ofstream(std::filesystem::path(a.out) / "kv-cost.md") << md;
    std::ofstream(std::filesystem::path(a.out) / "kv-cost.json") << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  }
  if (a.json) print_json(j);
  else std::cout << md << std::flush;
  return 0;
}
}  // namespace

Command add_kv_cost(CLI::App& app) {
  auto a = std::make_shared<KvCostArgs>();
  auto* c = app.add_subcommand("kv-cost", "What the f16 and q8_0 cache types cost in accuracy against f32 (spec/leakage.md L11)");
  c->add_option("FILE", a->files, "Conversations (OpenAI chat JSON)")->required()->check(nonempty());
  c->add_option("--types", a->types, "Cache types to compare with f32, comma-separated: f16, q8_0")->capture_default_str()->check(nonempty());
  add_model_option(c, a->opt.model);
  c->add_option("--seed", a->opt.seed, "Weight seed (synthetic models)")->capture_default_str()->check(decimal(0, UINT64_MAX));
  add_backend_options(c, a->opt.backend, a->opt.backend_options);
  c->add_option("--tokens", a->opt.continuation, "Greedy tokens decoded per session")->capture_default_str()->check(decimal(1, 4096));
  c->add_flag("--json", a->json, "Print the reports as JSON instead of the Markdown table");
  c->add_option("--out", a->out, "Also write kv-cost.md and kv-cost.json to DIR")->check(nonempty());
  return {c, [a] { return run_kv_cost_cmd(*a); }};
}

}  // namespace akv::cli
