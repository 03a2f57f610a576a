// akv: the command-line front of the verification suite. One subcommand per file in cli/.
// Exit codes: 0 success, 1 a check failed, 2 bad input or usage, 3 internal error.
#include <iostream>
#include <vector>

#include "cli/commands.hpp"
#include "reference/error.hpp"

int main(int argc, char** argv) {
  CLI::App app{"akv: the addressable KV cache, specified and verified"};
  app.require_subcommand(1);
  std::vector<akv::cli::Command> commands = {
      akv::cli::add_witness(app),
      akv::cli::add_bounds(app),
      akv::cli::add_campaign(app),
  };

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
    for (const auto& c : commands)
      if (c.app->parsed()) return c.run();
  } catch (const akv::Error& e) {
    std::cerr << "akv: error: " << akv::error_code_name(e.code()) << ": " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "akv: internal error: " << e.what() << "\n";
    return 3;
  }
  return 2;
}
