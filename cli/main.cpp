// akv: the command-line front of the verification suite.
//   akv witness FILE [--evict N[,M...] | --evict-poisoned] [--model tiny|small] [--seed S]
//                    [--backend NAME] [--json]
// Exit codes: 0 exact (evict == never, bit for bit), 1 not exact, 2 bad input or usage.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>

#include "reference/error.hpp"
#include "verify/witness.hpp"

namespace {

int run_witness_cmd(const std::string& file, const akv::WitnessOptions& opt, bool json) {
  const akv::Conversation conv = akv::load_conversation(file);
  const akv::WitnessReport r = akv::run_witness(conv, opt);
  if (json) {
    nlohmann::json j = akv::to_json(r);
    j["file"] = file;
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << file << "\n" << akv::to_text(r);
  }
  return r.exact() ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"akv: the addressable KV cache, specified and verified"};
  app.require_subcommand(1);

  auto* w = app.add_subcommand("witness", "Evict spans from a conversation and compare with a never-shown run, bit for bit");
  std::string file;
  std::vector<size_t> evict;
  bool evict_poisoned = false, json = false;
  akv::WitnessOptions opt;
  w->add_option("FILE", file, "Conversation: OpenAI chat JSON with \"messages\" (and optional \"poisoned\")")->required();
  auto* ev = w->add_option("--evict", evict, "Message indexes to evict (comma-separated)")->delimiter(',');
  w->add_flag("--evict-poisoned", evict_poisoned, "Evict the conversation's \"poisoned\" messages (the default)")->excludes(ev);
  w->add_option("--model", opt.model, "Model config: tiny | small")->capture_default_str();
  w->add_option("--seed", opt.seed, "Weight seed")->capture_default_str();
  w->add_option("--backend", opt.backend, "Backend: reference")->capture_default_str();
  w->add_flag("--json", json, "Print one JSON object instead of text");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "akv: " << e.what() << " (see akv --help)\n";
    return 2;
  }

  try {
    if (w->parsed()) {
      opt.evict = evict;
      return run_witness_cmd(file, opt, json);
    }
  } catch (const akv::Error& e) {
    std::cerr << "akv: error: " << akv::error_code_name(e.code()) << ": " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "akv: internal error: " << e.what() << "\n";
    return 3;
  }
  return 2;
}
