// The inference engines' kernels (spec/gate.md GT10): the fetch script's pins are the one pin
// of the llama-cpp-python sdist, and a missing build is one line naming the command, exit 2,
// without network. Their gate runs are CTest's `gate-thirdparty` tests (plugins/ggml,
// plugins/torch), registered only where scripts/fetch-engines has built them.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>

#include "support.hpp"
#include "text_file.hpp"

namespace {

using akv::test::read_text;

std::pair<int, std::string> run(const std::string& cmd) {
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  std::string out;
  char buf[512];
  while (p && fgets(buf, sizeof buf, p)) out += buf;
  const int st = p ? pclose(p) : -1;
  return {WIFEXITED(st) ? WEXITSTATUS(st) : -1, out};
}

}  // namespace

TEST(GT10_Engines, OneSdistPinForTheVocabAndForGgml) {
  const std::string lib = read_text(akv::test::source_dir() + "/scripts/lib/llama-sdist.sh");
  const std::string vocab = read_text(akv::test::source_dir() + "/scripts/fetch-vocab");
  const std::string engines = read_text(akv::test::source_dir() + "/scripts/fetch-engines");
  EXPECT_NE(lib.find("LLAMA_SDIST_SHA256=832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e\n"),
            std::string::npos);
  for (const std::string* s : {&vocab, &engines}) {
    EXPECT_NE(s->find("lib/llama-sdist.sh"), std::string::npos) << "a script with its own copy of the sdist pin";
    EXPECT_EQ(s->find("832db0699007f1be"), std::string::npos) << "the pin is written once, in scripts/lib/llama-sdist.sh";
  }
}

TEST(GT10_Engines, AMissingBuildIsOneLineNamingTheCommand) {
  const auto dir = std::filesystem::temp_directory_path() / ("akv_gt10_" + std::to_string(::getpid()));
  for (const char* what : {"ggml", "torch", "all"}) {
    const auto [rc, out] = run("AKV_ENGINES='" + dir.string() + "' '" + akv::test::source_dir() + "/scripts/fetch-engines' --check " + what);
    EXPECT_EQ(rc, 2) << out;
    EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
    EXPECT_NE(out.find("run scripts/fetch-engines"), std::string::npos) << out;
  }
  EXPECT_FALSE(std::filesystem::exists(dir)) << "--check made the folder";
  const auto [rc, out] = run("'" + akv::test::source_dir() + "/scripts/fetch-engines' --frobnicate");
  EXPECT_EQ(rc, 2) << out;
  EXPECT_NE(out.find("unknown argument '--frobnicate'"), std::string::npos) << out;
}
