// akv witness FILE [--evict N[,M...] | --evict-poisoned] [--model tiny|small|bench|smollm2|PATH.gguf] [--seed S]
//                  [--backend NAME] [--isa auto|portable|avx2|avx512] [--threads N] [--policy exact|kshift|mask|keep] [--json]
// Exit 0 exact (evict == never, bit for bit), 1 not exact, 2 bad input (spec/operations.md O5,
// spec/input.md IN4-IN6).
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "cli/options.hpp"
#include "optimized/cpu/thread_pool.hpp"
#include "verify/backends.hpp"
#include "verify/models.hpp"
#include "verify/witness.hpp"

namespace akv::cli {

namespace {
struct WitnessArgs {
  std::string file;
  std::string evict;  // "3,5": parsed strictly by index_list
  bool evict_poisoned = false;
  bool json = false;
  std::string policy = "exact";
  WitnessOptions opt;
};

int run_witness_cmd(const WitnessArgs& a) {
  const Conversation conv = load_conversation(a.file);
  WitnessOptions opt = a.opt;
  opt.policy = parse_policy(a.policy);
  if (!a.evict_poisoned && !a.evict.empty()) opt.evict = index_list("--evict", a.evict);
  const WitnessReport r = run_witness(conv, opt);
  if (a.json) {
    nlohmann::json j = to_json(r);
    j["file"] = a.file;
    print_json(j);
  } else {
    std::cout << a.file + "\n" + to_text(r) << std::flush;
  }
  return r.exact() ? 0 : 1;
}
}  // namespace

Command add_witness(CLI::App& app) {
  auto a = std::make_shared<WitnessArgs>();
  auto* w = app.add_subcommand("witness", "Evict spans from a conversation and compare with a never-shown run, bit for bit");
  w->add_option("FILE", a->file, "Conversation: OpenAI chat JSON with \"messages\" (and optional \"poisoned\")")
      ->required()
      ->check(nonempty());
  // A string, split by index_list: "" or "1,,2" is an error, never "message 0" (IN4).
  auto* ev = w->add_option("--evict", a->evict, "Message indexes to evict (comma-separated)")->check(nonempty());
  w->add_flag("--evict-poisoned", a->evict_poisoned, "Evict the conversation's \"poisoned\" messages (the default)")->excludes(ev);
  w->add_option("--model", a->opt.model, "Model: " + names_help(model_names()) + " or a PATH.gguf")
      ->capture_default_str()
      ->check(nonempty());
  w->add_option("--seed", a->opt.seed, "Weight seed")->capture_default_str()->check(decimal(0, UINT64_MAX));
  w->add_option("--backend", a->opt.backend, "Backend: " + names_help(known_backend_names()) + " (those this build has: " +
                                                 names_help(backend_names()) + ")")
      ->capture_default_str()
      ->check(nonempty());
  w->add_option("--isa", a->opt.isa, "cpu backend ISA: auto | portable | avx2 | avx512 (overrides $AKV_ISA)")
      ->capture_default_str()
      ->check(nonempty());
  w->add_option("--threads", a->opt.threads, "cpu backend threads (0: $AKV_THREADS, else 2)")
      ->capture_default_str()
      ->check(decimal(0, cpu::kMaxThreads));
  w->add_option("--policy", a->policy, "Eviction policy: exact (akv) | kshift | mask | keep (spec/leakage.md; only exact can pass)")
      ->capture_default_str()
      ->check(nonempty());
  w->add_flag("--json", a->json, "Print one JSON object instead of text");
  return {w, [a] { return run_witness_cmd(*a); }};
}

}  // namespace akv::cli
