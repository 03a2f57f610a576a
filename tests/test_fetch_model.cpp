// scripts/fetch-model (spec/gguf.md F1): the pins agree with the spec, and a missing model is a
// one-line error naming the command, exit 2. Needs no network; the real file is checked by
// tests/real_model/.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "support.hpp"
#include "text_file.hpp"

namespace {

using akv::test::read_text;

// Runs `cmd` through the shell; returns (exit status, stdout + stderr).
std::pair<int, std::string> run(const std::string& cmd) {
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  std::string out;
  char buf[512];
  while (p && fgets(buf, sizeof buf, p)) out += buf;
  const int st = p ? pclose(p) : -1;
  return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, out};
}

}  // namespace

TEST(F1_FetchModel, PinsAgreeWithTheSpec) {
  const std::string script = read_text(akv::test::source_dir() + "/scripts/fetch-model");
  const std::string spec = read_text(akv::test::source_dir() + "/spec/gguf.md");
  const std::string models = read_text(akv::test::source_dir() + "/runtime/models.cpp");
  // Each real model: the script's pins, the spec's statement of them, and the CLI's own copy.
  struct Pin {
    const char *sha, *size, *size_text, *version;
  };
  for (const Pin& p : {Pin{"b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53", "98362432", "98,362,432", "0.1.2"},
                       Pin{"a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818", "253113024", "253,113,024", "1.0.0"}}) {
    EXPECT_NE(script.find(std::string("SHA256=") + p.sha + "\n"), std::string::npos) << p.sha;
    EXPECT_NE(script.find(std::string("SIZE=") + p.size + "\n"), std::string::npos) << p.size;
    EXPECT_NE(script.find(std::string("VERSION=") + p.version + "\n"), std::string::npos) << p.version;
    EXPECT_NE(spec.find(p.sha), std::string::npos) << "spec/gguf.md F1 does not state the pinned SHA-256 " << p.sha;
    EXPECT_NE(spec.find(p.size_text), std::string::npos) << p.size_text;
    EXPECT_NE(models.find(std::string(p.size) + ", \"" + p.sha + "\""), std::string::npos) << "runtime/models.cpp pins another size or SHA-256";
  }
}

TEST(F1_FetchModel, TheCliRefusesACachedFileThatIsNotThePinnedOne) {
  // A file of the right name but other bytes in the cache: never loaded, one-line bad_model.
  const auto dir = std::filesystem::temp_directory_path() / ("akv_f1_cli_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "SmolLM2-135M-Instruct.Q4_1.gguf") << "GGUF but not the model";
  const auto [rc, out] = run("AKV_MODELS='" + dir.string() + "' '" + AKV_CLI + "' witness '" + akv::test::example("ja01_banking_bill_important_instructions.json") + "' --model smollm2");
  std::filesystem::remove_all(dir);
  EXPECT_EQ(rc, 2) << out;
  EXPECT_EQ(out.find('\n'), out.size() - 1) << "not one line: " << out;
  EXPECT_NE(out.find("bad_model"), std::string::npos) << out;
  EXPECT_NE(out.find("does not match the pinned size and SHA-256"), std::string::npos) << out;
}

TEST(F1_FetchModel, MissingModelIsOneLineErrorExit2) {
  const auto dir = std::filesystem::temp_directory_path() / ("akv_f1_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto [rc, out] = run("AKV_MODELS='" + dir.string() + "' '" + akv::test::source_dir() + "/scripts/fetch-model' --check");
  std::filesystem::remove_all(dir);
  EXPECT_EQ(rc, 2) << out;
  ASSERT_FALSE(out.empty());
  EXPECT_EQ(out.find('\n'), out.size() - 1) << "not one line: " << out;
  EXPECT_NE(out.find("run scripts/fetch-model"), std::string::npos) << out;
  EXPECT_NE(out.find(dir.string()), std::string::npos) << out;
  const auto [rc2, out2] = run("'" + akv::test::source_dir() + "/scripts/fetch-model' --bogus");
  EXPECT_EQ(rc2, 2) << out2;
}

// The CLI finds scripts/fetch-model at run time (no source path is compiled in): $AKV_FETCH_MODEL
// when set, else above its own executable. A script that prints a path is what is loaded.
TEST(F1_FetchModel, TheScriptIsFoundAtRunTimeNotThroughACompiledInPath) {
  const auto dir = std::filesystem::temp_directory_path() / ("akv_f1_find_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir / "empty");
  const auto script = dir / "fetch";
  {
    std::ofstream(script) << "#!/bin/sh\necho \"called with $1\" > '" << (dir / "called").string() << "'\nexit 2\n";
  }
  std::filesystem::permissions(script, std::filesystem::perms::owner_all);
  const auto [rc, out] = run("AKV_MODELS='" + (dir / "empty").string() + "' AKV_FETCH_MODEL='" + script.string() + "' '" + AKV_CLI +
                             "' tokenize '" + akv::test::example("ja01_banking_bill_important_instructions.json") + "' --model smollm2");
  EXPECT_EQ(rc, 2) << out;
  EXPECT_NE(out.find("could not be fetched"), std::string::npos) << out;
  EXPECT_EQ(read_text((dir / "called").string()), "called with smollm2\n") << "the script named by AKV_FETCH_MODEL was not run";
  // Without the variable, the one above the executable (the checkout's) is the one run.
  const std::string binary = read_text(AKV_CLI);
  EXPECT_EQ(binary.find(akv::test::source_dir() + std::string(1, '\0')), std::string::npos)
      << "the source tree's path is compiled into the binary (as a string of its own)";
  std::filesystem::remove_all(dir);
}
