// akv: the command-line front of the verification suite. One subcommand per file in cli/.
// Exit codes (spec/input.md IN5): 0 exact or sound, 1 not, 2 bad input or usage (one line on
// stderr, nothing on stdout), 3 internal error.
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <new>
#include <vector>

#include "cli/commands.hpp"
#include "cli/options.hpp"
#include <unistd.h>
#include "runtime/build_info.hpp"
#include "reference/error.hpp"
#include "reference/strict.hpp"

namespace {
// Whether the command line asks for JSON output (`--json` before any `--`).
bool json_requested(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--") return false;
    if (a == "--json") return true;
  }
  return false;
}

// The one shape of every error under --json (IN5): {"error": {"code", "message"}} on stdout.
void json_error(int argc, char** argv, const std::string& code, const std::string& message) {
  const int fd = akv::cli::json_error_fd();
  if (!json_requested(argc, argv) || fd < 0) return;
  std::cout << std::flush;
  const std::string text = nlohmann::json{{"error", {{"code", code}, {"message", message}}}}.dump(
                               -1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  for (size_t at = 0; at < text.size();) {
    const ssize_t n = ::write(fd, text.data() + at, text.size() - at);
    if (n <= 0) return;
    at += static_cast<size_t>(n);
  }
}
}  // namespace

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
      akv::cli::add_kv_cost(app),
      akv::cli::add_gate(app),
      akv::cli::add_verify(app),
      akv::cli::add_serve(app),
      akv::cli::add_audit(app),
  };
  app.set_version_flag("--version", "akv " + akv::akv_version() + " (commit " + akv::akv_commit() + ")");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "akv: " << akv::printable(e.what(), 400) << " (see akv --help)\n";
    json_error(argc, argv, "usage", e.what());
    return 2;
  }

  try {
    for (const auto& c : commands)
      if (c.app->parsed()) return c.run();
  } catch (const akv::Error& e) {
    // One line whatever bytes the input carried: printable() escapes newlines and the rest.
    std::cerr << "akv: error: " << akv::error_code_name(e.code()) << ": " << akv::printable(e.what(), 1000) << "\n";
    // Under --json the error is JSON on stdout too, one shape for every error (IN5).
    json_error(argc, argv, akv::error_code_name(e.code()), e.what());
    return 2;
  } catch (const std::bad_alloc&) {
    std::cerr << "akv: internal error: out of memory\n";
    json_error(argc, argv, "internal", "out of memory");
    return 3;
  } catch (const std::exception& e) {
    std::cerr << "akv: internal error: " << akv::printable(e.what(), 1000) << "\n";
    json_error(argc, argv, "internal", e.what());
    return 3;
  }
  return 2;
}
