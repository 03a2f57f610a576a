// The lists of backends, models, ISAs and policies in every command's help and in README.md
// are the registries' (spec/input.md IN9); every command that takes --backend refuses an
// unknown one as unknown_backend (IN7).
#include <gtest/gtest.h>

#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cli_support.hpp"
#include "optimized/cpu/isa.hpp"
#include "reference/config.hpp"
#include "reference/policy.hpp"
#include "support.hpp"
#include "text_file.hpp"
#include "runtime/backends.hpp"
#include "runtime/models.hpp"

using namespace akv;

namespace {

// The registry behind `--option` of `akv command`; empty: the command has no such list.
std::vector<std::string> registry(const std::string& command, const std::string& option) {
  if (option == "model") return model_forms();
  if (option == "backend") return known_backend_names();
  if (option == "isa") return cpu::isa_choices();
  if (option == "policy" || option == "policies") return policy_names();
  return {};
}

std::set<std::string> split(const std::string& list, char sep) {
  std::set<std::string> out;
  std::stringstream s(list);
  for (std::string item; std::getline(s, item, sep);) out.insert(item);
  return out;
}

std::string joined(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

}  // namespace

TEST(IN9_HelpFromRegistries, EveryCommandsHelpListsEachRegistryEntry) {
  const struct {
    const char* command;
    std::vector<const char*> options;
  } commands[] = {
      {"witness", {"model", "backend", "isa", "policy"}},
      {"leakage", {"model", "backend", "isa", "policies"}},
      {"logits", {"model", "backend", "isa"}},
      {"tokenize", {"model"}},
      {"rope", {"model"}},
      {"bounds", {"model"}},
      {"campaign", {"backend"}},
  };
  for (const auto& c : commands) {
    const test::CliRun r = test::run_akv({c.command, "--help"});
    ASSERT_EQ(r.code, 0) << c.command << ": " << r.err;
    for (const char* o : c.options) {
      EXPECT_NE(r.out.find(std::string("--") + o), std::string::npos) << c.command << " --help has no --" << o;
      const auto names = registry(c.command, o);
      ASSERT_FALSE(names.empty());
      for (const std::string& n : names)
        EXPECT_NE(r.out.find(n), std::string::npos) << "akv " << c.command << " --help does not list " << n << " (--" << o
                                                    << "; the registry: " << joined(names) << ")\n"
                                                    << r.out;
    }
  }
}

// README.md's command table: a `--model`, `--backend`, `--isa`, `--policy` or `--policies` value
// is either the registry's list (a|b|c or a,b,c, in any order) or a capital placeholder (M, B).
// Its Models and Backends paragraphs name every registry entry.
TEST(IN9_HelpFromRegistries, ReadmeAgreesWithTheRegistries) {
  const std::string readme = test::read_text(test::source_dir() + "/README.md");
  ASSERT_FALSE(readme.empty());
  const std::regex row(R"(^\| `akv ([a-z]+) )");
  const std::regex option(R"(--(model|backend|isa|policy|policies) ([^\]\[` ]+))");
  const std::regex placeholder("[A-Z][A-Z0-9_-]*");
  std::stringstream lines(readme);
  size_t lists = 0, rows = 0;
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (!std::regex_search(line, m, row)) continue;
    ++rows;
    const std::string command = m[1];
    for (std::sregex_iterator it(line.begin(), line.end(), option), end; it != end; ++it) {
      const std::string opt = (*it)[1];
      std::string value = (*it)[2];
      for (size_t at; (at = value.find("\\|")) != std::string::npos;) value.replace(at, 2, "|");
      const bool list = value.find('|') != std::string::npos || value.find(',') != std::string::npos;
      if (!list) {
        EXPECT_TRUE(std::regex_match(value, placeholder))
            << "README.md, akv " << command << ": --" << opt << " " << value << " is neither the registry's list nor a placeholder";
        continue;
      }
      ++lists;
      const auto names = registry(command, opt);
      EXPECT_EQ(split(value, value.find('|') != std::string::npos ? '|' : ','), std::set<std::string>(names.begin(), names.end()))
          << "README.md, akv " << command << " --" << opt << ": " << value << " is not the registry: " << joined(names);
    }
  }
  EXPECT_GE(rows, 7u) << "README.md's command table has fewer akv rows than commands";
  EXPECT_GE(lists, 5u) << "README.md's command table lists too few option values to check";

  const auto paragraph = [&](const std::string& head) {
    const size_t at = readme.find("\n" + head);
    EXPECT_NE(at, std::string::npos) << "README.md has no paragraph starting '" << head << "'";
    return at == std::string::npos ? std::string() : readme.substr(at, readme.find("\n\n", at + 1) - at);
  };
  const std::string models = paragraph("Models:"), backends = paragraph("Backends:");
  for (const std::string& n : model_forms()) EXPECT_NE(models.find("`" + n + "`"), std::string::npos) << "Models: lacks `" << n << "`";
  for (const std::string& n : known_backend_names())
    EXPECT_NE(backends.find("`" + n + "`"), std::string::npos) << "Backends: lacks `" << n << "`";
}

TEST(IN7_ErrorsNameTheProblem, UnknownBackendFromEveryCommand) {
  const std::string f = test::example("ad01_banking_ut0_gpt4omini.json");
  const std::vector<std::vector<std::string>> runs = {
      {"witness", f, "--backend", "gpu9"},
      {"leakage", f, "--model", "tiny", "--backend", "gpu9"},
      {"logits", f, "--model", "tiny", "--json", "--backend", "gpu9"},
      {"campaign", "--cases", "1", "--backend", "gpu9"},
  };
  for (const auto& args : runs) {
    const test::CliRun r = test::run_akv(args);
    EXPECT_EQ(r.code, 2) << args[0] << ": " << r.err;
    EXPECT_TRUE(test::empty_or_json_error(r.out)) << args[0] << " wrote to stdout: " << r.out;
    EXPECT_NE(r.err.find("akv: error: unknown_backend: unknown backend 'gpu9'"), std::string::npos) << args[0] << ": " << r.err;
  }
}
