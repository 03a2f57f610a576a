// akv: the command-line front of the verification suite. One subcommand per file in cli/.
// Exit codes (spec/input.md IN5): 0 exact or sound, 1 not, 2 bad input or usage (one line on
// stderr, nothing on stdout), 3 internal error.
#include <iostream>
#include <new>
#include <vector>

#include "cli/commands.hpp"
#include "reference/error.hpp"
#include "reference/strict.hpp"

int main(int argc, char** argv) {
  CLI::App app{"akv: the addressable KV cache, specified and verified"};
  app.require_subcommand(1);
  std::vector<akv::cli::Command> commands = {
      akv::cli::add_witness(app),
      akv::cli::add_bounds(app),
      akv::cli::add_campaign(app),
      akv::cli::add_tokenize(app),
      akv::cli::add_logits(app),
      akv::cli::add_rope(app),
      akv::cli::add_leakage(app),
      akv::cli::add_gate(app),
  };

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "akv: " << akv::printable(e.what(), 400) << " (see akv --help)\n";
    return 2;
  }

  try {
    for (const auto& c : commands)
      if (c.app->parsed()) return c.run();
  } catch (const akv::Error& e) {
    // One line whatever bytes the input carried: printable() escapes newlines and the rest.
    std::cerr << "akv: error: " << akv::error_code_name(e.code()) << ": " << akv::printable(e.what(), 1000) << "\n";
    return 2;
  } catch (const std::bad_alloc&) {
    std::cerr << "akv: internal error: out of memory\n";
    return 3;
  } catch (const std::exception& e) {
    std::cerr << "akv: internal error: " << akv::printable(e.what(), 1000) << "\n";
    return 3;
  }
  return 2;
}
