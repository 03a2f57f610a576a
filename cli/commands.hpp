// Each akv subcommand lives in its own file and registers itself here.
#pragma once
#include <CLI/CLI.hpp>
#include <functional>

namespace akv::cli {

/// A registered subcommand: run() is called when it was parsed and returns the exit code
/// (0 success, 1 check failed, 2 bad input). akv::Error thrown from run() becomes exit 2.
struct Command {
  CLI::App* app;
  std::function<int()> run;
};

Command add_witness(CLI::App& app);
Command add_bounds(CLI::App& app);
Command add_campaign(CLI::App& app);
Command add_tokenize(CLI::App& app);
Command add_logits(CLI::App& app);
Command add_rope(CLI::App& app);
Command add_leakage(CLI::App& app);
Command add_kv_cost(CLI::App& app);
Command add_gate(CLI::App& app);
Command add_verify(CLI::App& app);
Command add_serve(CLI::App& app);
Command add_audit(CLI::App& app);

}  // namespace akv::cli
