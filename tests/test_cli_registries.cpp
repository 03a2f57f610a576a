// The lists of backends, models, ISAs and policies in every command's help and in docs/cli.md
// are the registries' (spec/input.md IN9); docs/cli.md has one row per subcommand the CLI
// registers, read from `akv --help`, and the README's examples name real commands and options;
// every command that takes --backend refuses an unknown one as unknown_backend (IN7).
#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cli_support.hpp"
#include "reference/config.hpp"
#include "reference/policy.hpp"
#include "support.hpp"
#include "text_file.hpp"
#include "runtime/backends.hpp"
#include "runtime/models.hpp"

using namespace akv;

namespace {

// The registry behind `--option`; empty: no registry gives that option's names.
std::vector<std::string> registry(const std::string& option) {
  if (option == "model") return model_forms();
  if (option == "backend") return known_backend_names();
  if (option == "isa") return isa_choices();
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

// The names CLI11 lists under "Subcommands:" in a help text.
std::vector<std::string> subcommands_in(const std::string& help) {
  std::vector<std::string> out;
  const size_t at = help.find("\nSubcommands:\n");
  if (at == std::string::npos) return out;
  std::stringstream s(help.substr(at + 14));
  const std::regex entry(R"(^  ([a-z][a-z0-9-]*)(\s|$))");
  for (std::string line; std::getline(s, line) && !line.empty();) {
    std::smatch m;
    if (std::regex_search(line, m, entry)) out.push_back(m[1]);
  }
  return out;
}

// Every subcommand the CLI registers, as the words a user types ("witness", "campaign merge"),
// with its --help text: read from `akv --help`, then each subcommand's own --help.
const std::map<std::string, std::string>& registered_commands() {
  static const std::map<std::string, std::string> commands = [] {
    std::map<std::string, std::string> out;
    std::vector<std::vector<std::string>> todo;
    const test::CliRun top = test::run_akv({"--help"});
    EXPECT_EQ(top.code, 0) << top.err;
    for (const std::string& c : subcommands_in(top.out)) todo.push_back({c});
    while (!todo.empty()) {
      std::vector<std::string> words = todo.back();
      todo.pop_back();
      std::vector<std::string> args = words;
      args.push_back("--help");
      const test::CliRun r = test::run_akv(args);
      std::string name;
      for (const auto& w : words) name += (name.empty() ? "" : " ") + w;
      EXPECT_EQ(r.code, 0) << "akv " << name << " --help: " << r.err;
      out[name] = r.out;
      for (const std::string& sub : subcommands_in(r.out)) {
        std::vector<std::string> next = words;
        next.push_back(sub);
        todo.push_back(next);
      }
    }
    return out;
  }();
  return commands;
}

// Whether `akv command --help` lists the option `--name` (at the start of an option line).
bool help_has_option(const std::string& help, const std::string& name) {
  return std::regex_search(help, std::regex("\n  (-[a-z],)?--" + name + "([ =\n]|$)"));
}

// The command a command line names, after `akv ` ("campaign merge" for `campaign merge DIR`):
// the longest run of lowercase words, each followed by a space or the end, that is registered;
// "" when its first word is no subcommand.
std::string command_of(const std::string& words) {
  std::string found, name;
  std::stringstream s(words);
  for (std::string w; s >> w;) {
    if (!std::regex_match(w, std::regex("[a-z][a-z0-9-]*"))) break;
    name += (name.empty() ? "" : " ") + w;
    if (registered_commands().count(name)) found = name;
    else break;
  }
  return found;
}

}  // namespace

// Every command's --help lists every name of each registry behind one of its options: for
// every subcommand the CLI registers, not a list typed here. The commands that must take such
// an option are a floor, so an option dropped from a command cannot pass as "no registry".
TEST(IN9_HelpFromRegistries, EveryCommandsHelpListsEachRegistryEntry) {
  const auto& commands = registered_commands();
  ASSERT_TRUE(commands.count("witness") && commands.count("campaign merge"))
      << "akv --help and akv campaign --help did not give the subcommands: is the parse of CLI11's help broken?";
  const std::map<std::string, std::set<std::string>> floor = {
      {"witness", {"model", "backend", "isa", "policy"}}, {"leakage", {"model", "backend", "isa", "policies"}},
      {"logits", {"model", "backend", "isa"}},           {"tokenize", {"model"}},
      {"rope", {"model"}},                                {"bounds", {"model"}},
      {"campaign", {"backend"}},                          {"serve", {"model", "backend", "isa"}},
      {"gate", {"model"}},                                {"audit", {"model"}},
  };
  size_t checked = 0;
  for (const auto& [command, help] : commands) {
    std::set<std::string> taken;
    for (const char* o : {"model", "backend", "isa", "policy", "policies"}) {
      if (!help_has_option(help, o)) continue;
      taken.insert(o);
      ++checked;
      const auto names = registry(o);
      ASSERT_FALSE(names.empty());
      std::vector<std::string> missing;
      for (const std::string& n : names)
        if (help.find(n) == std::string::npos) missing.push_back(n);
      EXPECT_TRUE(missing.empty()) << "akv " << command << " --help does not list " << joined(missing) << " (--" << o
                                   << "; the registry: " << joined(names) << ")\n"
                                   << help;
    }
    if (floor.count(command)) {
      for (const std::string& o : floor.at(command)) EXPECT_TRUE(taken.count(o)) << "akv " << command << " --help has no --" << o;
    }
  }
  for (const auto& [command, options] : floor) EXPECT_TRUE(commands.count(command)) << "akv has no subcommand " << command;
  EXPECT_GE(checked, 20u) << "too few registry options found in the help texts: is the option parse broken?";
}

// docs/cli.md's command table has exactly one row per registered subcommand, each row names a
// registered subcommand, and every option a row shows is one its subcommand takes.
TEST(IN9_HelpFromRegistries, CliDocHasOneRowPerRegisteredCommand) {
  const auto& commands = registered_commands();
  ASSERT_GE(commands.size(), 2u);
  const std::string doc = test::read_text(test::source_dir() + "/docs/cli.md");
  ASSERT_FALSE(doc.empty()) << "no docs/cli.md";
  const std::regex row(R"(^\| `akv ([^`]*)`)");
  const std::regex option(R"((^|[\s\[(|])--([a-z][a-z0-9-]*))");
  const std::regex form_in_cell("`akv ([^`]*)`");
  std::map<std::string, int> rows;
  std::stringstream lines(doc);
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (!std::regex_search(line, m, row)) continue;
    const std::string command = command_of(m[1]);
    EXPECT_FALSE(command.empty()) << "docs/cli.md: a row names `akv " << m[1] << "`, which is no subcommand of akv --help";
    if (command.empty()) continue;
    ++rows[command];
    // The command cell: every `akv ...` form in it belongs to this command, its options to it.
    const std::string cell = line.substr(1, line.find(" | ", 2) - 1);
    for (std::sregex_iterator it(cell.begin(), cell.end(), form_in_cell), end; it != end; ++it) {
      const std::string form = (*it)[1];
      EXPECT_EQ(command_of(form), command) << "docs/cli.md, the row of akv " << command << " also shows `akv " << form << "`";
      for (std::sregex_iterator o(form.begin(), form.end(), option); o != end; ++o)
        EXPECT_TRUE(help_has_option(commands.at(command), (*o)[2]))
            << "docs/cli.md: `akv " << command << " --" << (*o)[2] << "`: akv " << command << " --help has no such option";
    }
  }
  for (const auto& [command, help] : commands)
    EXPECT_EQ(rows[command], 1) << "docs/cli.md has " << rows[command] << " rows for akv " << command << " (one wanted)";
}

// docs/cli.md's tables: a `--model`, `--backend`, `--isa`, `--policy` or `--policies` value is
// either the registry's list (a|b|c or a,b,c, in any order) or a capital placeholder (M, B).
// Its Models and Backends paragraphs name every registry entry.
TEST(IN9_HelpFromRegistries, CliDocAgreesWithTheRegistries) {
  const std::string doc = test::read_text(test::source_dir() + "/docs/cli.md");
  ASSERT_FALSE(doc.empty()) << "no docs/cli.md";
  const std::regex row(R"(^\| `(akv [a-z]+ |--))");
  const std::regex option(R"(--(model|backend|isa|policy|policies) ([^\]\[` ]+))");
  const std::regex placeholder("[A-Z][A-Z0-9_-]*");
  std::stringstream lines(doc);
  size_t lists = 0, rows = 0;
  for (std::string line; std::getline(lines, line);) {
    if (!std::regex_search(line, row)) continue;
    ++rows;
    for (std::sregex_iterator it(line.begin(), line.end(), option), end; it != end; ++it) {
      const std::string opt = (*it)[1];
      std::string value = (*it)[2];
      for (size_t at; (at = value.find("\\|")) != std::string::npos;) value.replace(at, 2, "|");
      const bool list = value.find('|') != std::string::npos || value.find(',') != std::string::npos;
      if (!list) {
        EXPECT_TRUE(std::regex_match(value, placeholder))
            << "docs/cli.md: --" << opt << " " << value << " is neither the registry's list nor a placeholder\n" << line;
        continue;
      }
      ++lists;
      const auto names = registry(opt);
      EXPECT_EQ(split(value, value.find('|') != std::string::npos ? '|' : ','), std::set<std::string>(names.begin(), names.end()))
          << "docs/cli.md: --" << opt << " " << value << " is not the registry: " << joined(names);
    }
  }
  EXPECT_GE(rows, registered_commands().size()) << "docs/cli.md's tables have fewer rows than akv has commands";
  EXPECT_GE(lists, 5u) << "docs/cli.md lists too few option values to check";

  const auto paragraph = [&](const std::string& head) {
    const size_t at = doc.find("\n" + head);
    EXPECT_NE(at, std::string::npos) << "docs/cli.md has no paragraph starting '" << head << "'";
    return at == std::string::npos ? std::string() : doc.substr(at, doc.find("\n\n", at + 1) - at);
  };
  const std::string models = paragraph("Models:"), backends = paragraph("Backends:");
  for (const std::string& n : model_forms()) EXPECT_NE(models.find("`" + n + "`"), std::string::npos) << "Models: lacks `" << n << "`";
  for (const std::string& n : known_backend_names())
    EXPECT_NE(backends.find("`" + n + "`"), std::string::npos) << "Backends: lacks `" << n << "`";
}

// The README's examples run: every command line in its code blocks (`akv ...`, also as
// build/release/cli/akv or after `$ `) names a registered subcommand and only options it takes.
TEST(IN9_HelpFromRegistries, ReadmeExamplesUseRealCommandsAndOptions) {
  const auto& commands = registered_commands();
  const std::string readme = test::read_text(test::source_dir() + "/README.md");
  ASSERT_FALSE(readme.empty());
  const std::regex call(R"(^(?:\$ )?(?:\S*/)?akv ([a-z][a-z0-9-]*)(?= |$)(.*))");
  const std::regex option(R"((^|\s)--([a-z][a-z0-9-]*))");
  std::stringstream lines(readme);
  bool in_code = false;
  size_t calls = 0;
  std::set<std::string> shown;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("```", 0) == 0) {
      in_code = !in_code;
      continue;
    }
    std::smatch m;
    if (!in_code || !std::regex_search(line, m, call)) continue;
    std::string rest = m[1].str() + m[2].str();
    for (const char* cut : {" #", " &", " |", " >", " ;"})
      if (const size_t at = rest.find(cut); at != std::string::npos) rest.erase(at);
    const std::string command = command_of(rest);
    EXPECT_FALSE(command.empty()) << "README.md: `" << line << "` names no subcommand of akv --help";
    if (command.empty()) continue;
    ++calls;
    shown.insert(command.substr(0, command.find(' ')));
    for (std::sregex_iterator o(rest.begin(), rest.end(), option), end; o != end; ++o)
      EXPECT_TRUE(help_has_option(commands.at(command), (*o)[2]))
          << "README.md: `" << line << "`: akv " << command << " --help has no --" << (*o)[2];
  }
  // The five jobs the README shows, each with an example.
  for (const char* job : {"witness", "serve", "gate", "bounds", "campaign"})
    EXPECT_TRUE(shown.count(job)) << "README.md has no example of akv " << job;
  EXPECT_GE(calls, 5u);
}

// cli/witness_cmd.cpp's synopsis (the comment that opens the file) names every option
// `akv witness --help` lists, and the four exit codes of IN5.
TEST(IN9_HelpFromRegistries, WitnessSynopsisListsEveryOption) {
  const std::string source = test::read_text(test::source_dir() + "/cli/witness_cmd.cpp");
  ASSERT_FALSE(source.empty());
  std::string synopsis;
  std::stringstream lines(source);
  for (std::string line; std::getline(lines, line) && line.rfind("//", 0) == 0;) synopsis += line.substr(2) + "\n";
  ASSERT_NE(synopsis.find("akv witness FILE"), std::string::npos) << "cli/witness_cmd.cpp does not open with its synopsis";
  const std::string help = registered_commands().at("witness");
  const std::regex listed(R"(\n  (?:-[a-z],)?--([a-z][a-z0-9-]*))");
  size_t options = 0;
  for (std::sregex_iterator it(help.begin(), help.end(), listed), end; it != end; ++it) {
    const std::string o = (*it)[1];
    if (o == "help") continue;
    ++options;
    EXPECT_TRUE(std::regex_search(synopsis, std::regex("(^|[\\s\\[|])--" + o + "([\\s\\]]|$)")))
        << "cli/witness_cmd.cpp's synopsis lacks --" << o << "\n" << synopsis;
  }
  EXPECT_GE(options, 16u) << "akv witness --help lists too few options: is the parse broken?";
  for (const char* code : {"0 passed", "1 not", "2 bad input", "3 internal error"})
    EXPECT_NE(synopsis.find(code), std::string::npos) << "cli/witness_cmd.cpp's synopsis lacks exit " << code;
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
