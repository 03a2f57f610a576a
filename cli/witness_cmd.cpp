// akv witness FILE [--evict N[,M...] | --evict-poisoned] [--model tiny|small] [--seed S]
//                  [--backend reference|cpu] [--isa auto|portable|avx2|avx512] [--threads N] [--json]
// Exit 0 exact (evict == never, bit for bit), 1 not exact, 2 bad input (spec/operations.md O5).
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "verify/witness.hpp"

namespace akv::cli {

namespace {
struct WitnessArgs {
  std::string file;
  std::vector<size_t> evict;
  bool evict_poisoned = false;
  bool json = false;
  WitnessOptions opt;
};

int run_witness_cmd(const WitnessArgs& a) {
  const Conversation conv = load_conversation(a.file);
  WitnessOptions opt = a.opt;
  opt.evict = a.evict;
  const WitnessReport r = run_witness(conv, opt);
  if (a.json) {
    nlohmann::json j = to_json(r);
    j["file"] = a.file;
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << a.file << "\n" << to_text(r);
  }
  return r.exact() ? 0 : 1;
}
}  // namespace

Command add_witness(CLI::App& app) {
  auto a = std::make_shared<WitnessArgs>();
  auto* w = app.add_subcommand("witness", "Evict spans from a conversation and compare with a never-shown run, bit for bit");
  w->add_option("FILE", a->file, "Conversation: OpenAI chat JSON with \"messages\" (and optional \"poisoned\")")->required();
  auto* ev = w->add_option("--evict", a->evict, "Message indexes to evict (comma-separated)")->delimiter(',');
  w->add_flag("--evict-poisoned", a->evict_poisoned, "Evict the conversation's \"poisoned\" messages (the default)")->excludes(ev);
  w->add_option("--model", a->opt.model, "Model config: tiny | small | bench")->capture_default_str();
  w->add_option("--seed", a->opt.seed, "Weight seed")->capture_default_str();
  w->add_option("--backend", a->opt.backend, "Backend: reference | cpu")->capture_default_str();
  w->add_option("--isa", a->opt.isa, "cpu backend ISA: auto | portable | avx2 | avx512 (overrides $AKV_ISA)")->capture_default_str();
  w->add_option("--threads", a->opt.threads, "cpu backend threads (0: $AKV_THREADS, else 2)")->capture_default_str();
  w->add_flag("--json", a->json, "Print one JSON object instead of text");
  return {w, [a] { return run_witness_cmd(*a); }};
}

}  // namespace akv::cli
