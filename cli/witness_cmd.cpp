// akv witness FILE [--evict N[,M...] | --evict-poisoned | --redact N:STRING...] [--model M] [--seed S]
//                  [--backend B | --kernels LIB.so] [--isa I] [--threads N] [--kv-type T] [--policy P]
//                  [--logit-rows last|all] [--same-config | --cross-threads N --cross-isa I] [--json] [--out FILE]
// Exit (spec/input.md IN5): 0 passed (evict == never bit for bit, prefix untouched, only the
// survivors written: spec/operations.md O5), 1 not, 2 bad input or usage (IN4, IN6), 3 internal error.
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "cli/options.hpp"
#include "cli/progress.hpp"
#include "cli/shared_options.hpp"
#include "leakage/approx_evict.hpp"
#include "readers/conversation/chat_parse.hpp"
#include "runtime/backends.hpp"
#include "verify/provenance.hpp"
#include "verify/witness.hpp"

namespace akv::cli {

namespace {
struct WitnessArgs {
  std::string file;
  std::string evict;  // "3,5": parsed strictly by index_list
  bool evict_poisoned = false;
  std::vector<std::string> redact;  // "N:STRING", parsed by parse_redaction (O10)
  bool json = false;
  std::string policy = "exact";
  std::string logit_rows = "last";
  std::string out;        // --out FILE: the JSON report with its provenance (O9)
  WitnessOptions opt;
};

int run_witness_cmd(const WitnessArgs& a) {
  const Conversation conv = load_conversation(a.file);
  WitnessOptions opt = a.opt;
  opt.policy = parse_policy(a.policy);
  opt.approximate = evict_under;
  opt.logit_rows = a.logit_rows == "all" ? LogitRows::kAll : LogitRows::kLast;
  if (!a.evict_poisoned && !a.evict.empty()) opt.evict = index_list("--evict", a.evict);
  for (const std::string& r : a.redact) opt.redact.push_back(parse_redaction(r));
  opt.progress = tty_progress("akv witness");
  const WitnessReport r = [&] {
    const ProgressLine line;
    return run_witness(conv, opt);
  }();
  nlohmann::json j = to_json(r);
  j["file"] = a.file;
  if (a.json || !a.out.empty()) j["provenance"] = witness_provenance(a.file, opt, r);  // O9
  if (!a.out.empty()) write_text_file(a.out, j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  if (a.json) {
    print_json(j);
  } else {
    std::cout << a.file + "\n" + to_text(r) << std::flush;
  }
  return r.passed() ? 0 : 1;
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
  auto* ep = w->add_flag("--evict-poisoned", a->evict_poisoned, "Evict the conversation's \"poisoned\" messages (the default)")->excludes(ev);
  w->add_option("--redact", a->redact,
                "N:STRING: remove every occurrence of STRING from message N (0-based) instead of evicting; the message is "
                "re-run from its start, the never-shown run is the conversation without the string (repeatable; "
                "the string is never printed or written)")
      ->excludes(ev)
      ->excludes(ep)
      ->check(nonempty());
  add_model_option(w, a->opt.model);
  w->add_option("--seed", a->opt.seed, "Weight seed")->capture_default_str()->check(decimal(0, UINT64_MAX));
  add_backend_options(w, a->opt.backend, a->opt.backend_options);
  add_kv_type_option(w, a->opt.kv_type);
  w->add_option("--policy", a->policy, "Eviction policy: " + names_help(policy_names()) + " (spec/leakage.md; exact is akv's, only it can pass)")
      ->capture_default_str()
      ->check(nonempty());
  w->add_option("--logit-rows", a->logit_rows,
                "Rows whose logits each append computes: last (as an engine asks) or all (as the property suite; its counterexample files say so)")
      ->capture_default_str()
      ->check(CLI::IsMember({"last", "all"}));
  w->add_flag("--same-config", a->opt.same_config,
              "Build the never-shown run under one configuration only (a weaker certificate: invariance across threads and "
              "ISAs is then not checked)");
  auto* ct = w->add_option("--cross-threads", a->opt.cross_threads,
                           "Threads of the second configuration (default: 1, or 2 when the first runs 1)")
                 ->check(decimal(1, max_threads()));
  auto* ci = w->add_option("--cross-isa", a->opt.cross_isa,
                           "ISA of the second configuration: " + names_help(isa_choices()) +
                               " (default: another ISA this CPU runs)")
                 ->check(nonempty());
  w->get_option("--same-config")->excludes(ct)->excludes(ci);
  w->add_flag("--json", a->json, "Print one JSON object instead of text (with its provenance block)");
  w->add_option("--out", a->out, "Also write the JSON report with its provenance block to FILE, for `akv verify FILE`")
      ->check(nonempty());
  return {w, [a] { return run_witness_cmd(*a); }};
}

}  // namespace akv::cli
