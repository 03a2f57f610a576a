// A witness a third party can re-run (spec/operations.md O9): `akv --version`, the provenance
// block, `akv witness --out FILE` and `akv verify FILE`; and JSON errors under --json (IN5).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli_support.hpp"
#include "hostile_json.hpp"
#include "support.hpp"

using namespace akv;
using nlohmann::json;

namespace {

const std::string kConv = "ja01_banking_bill_important_instructions.json";

std::string temp(const std::string& name) { return ::testing::TempDir() + "akv_o9_" + name; }

json read_json(const std::string& path) { return json::parse(test::slurp(path)); }

void write_json(const std::string& path, const json& j) { std::ofstream(path) << j.dump(2); }

// A witness file of the tiny model on a copy of kConv (so the test may change the input).
std::pair<std::string, std::string> witness_file(const std::string& name) {
  const std::string input = temp(name + ".json"), out = temp(name + ".witness.json");
  std::filesystem::copy_file(test::example(kConv), input, std::filesystem::copy_options::overwrite_existing);
  const test::CliRun r = test::run_akv({"witness", input, "--model", "tiny", "--out", out});
  EXPECT_EQ(r.code, 0) << r.err;
  return {input, out};
}

}  // namespace

TEST(O9_Provenance, VersionFlag) {
  const test::CliRun r = test::run_akv({"--version"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("akv 0.", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("(commit "), std::string::npos) << r.out;
}

TEST(O9_Provenance, TheWitnessFileNamesEverythingARerunNeeds) {
  const auto [input, out] = witness_file("block");
  const json j = read_json(out);
  ASSERT_TRUE(j.contains("provenance")) << j.dump();
  const json& p = j["provenance"];
  EXPECT_EQ(p["akv"]["version"].get<std::string>().rfind("0.", 0), 0u);
  EXPECT_TRUE(p["akv"]["commit"].is_string());
  EXPECT_EQ(p["input"]["path"], input);
  EXPECT_EQ(p["input"]["sha256"].get<std::string>().size(), 64u);
  EXPECT_TRUE(p["model"]["sha256"].is_null()) << "a synthetic model has no file";
  EXPECT_EQ(p["options"]["model"], "tiny");
  EXPECT_EQ(p["options"]["evict"], json::array({2})) << "the file's poisoned list, as evicted";
  EXPECT_EQ(p["options"]["seed"], 1);
  EXPECT_TRUE(p["machine"]["cpu"].is_string());
  EXPECT_EQ(p["created"].get<std::string>().back(), 'Z');
  EXPECT_TRUE(j["passed"].get<bool>());
}

TEST(O9_Verify, AnUnchangedWitnessVerifies) {
  const auto [input, out] = witness_file("ok");
  const test::CliRun r = test::run_akv({"verify", out});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("VERIFIED: every digest reproduces"), std::string::npos) << r.out;
  const test::CliRun j = test::run_akv({"verify", out, "--json"});
  ASSERT_EQ(j.code, 0) << j.err;
  EXPECT_TRUE(json::parse(j.out)["reproduced"].get<bool>());
}

TEST(O9_Verify, AChangedDigestInputOrOptionFails) {
  const auto [input, out] = witness_file("tamper");
  json j = read_json(out);
  j["logits_sha256_never"] = std::string(64, '0');
  const std::string forged = temp("forged.witness.json");
  write_json(forged, j);
  const test::CliRun r = test::run_akv({"verify", forged});
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("logits_sha256_never: recorded 0000000000000000"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("NOT VERIFIED"), std::string::npos) << r.out;
  // Another seed: other weights, other digests.
  json s = read_json(out);
  s["provenance"]["options"]["seed"] = 2;
  write_json(forged, s);
  EXPECT_EQ(test::run_akv({"verify", forged}).code, 1);
  // The input edited after the witness was written.
  std::ofstream(input, std::ios::app) << "\n";
  const test::CliRun in = test::run_akv({"verify", out});
  EXPECT_EQ(in.code, 1) << in.out;
  EXPECT_NE(in.out.find("input sha256: recorded"), std::string::npos) << in.out;
}

TEST(O9_Verify, NotAWitnessFileIsExitTwo) {
  const std::string bad = temp("plain.json");
  std::ofstream(bad) << R"({"exact": true})";
  const test::CliRun r = test::run_akv({"verify", bad});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("not a witness file"), std::string::npos) << r.err;
  std::ofstream(bad) << "{";
  EXPECT_EQ(test::run_akv({"verify", bad}).code, 2);
  json broken = read_json(witness_file("broken").second);
  broken["provenance"]["options"].erase("policy");
  write_json(bad, broken);
  const test::CliRun m = test::run_akv({"verify", bad});
  EXPECT_EQ(m.code, 2);
  EXPECT_NE(m.err.find("provenance.options: 'policy' missing"), std::string::npos) << m.err;
}

// The witness file is read by the strict JSON reader (IN3's rules): exit 2 naming the file.
TEST(O9_Verify, AHostileWitnessFileIsExitTwoNamingTheFile) {
  const std::string bad = temp("hostile.json");
  for (const test::HostileJson& h : test::hostile_json()) {
    std::ofstream(bad, std::ios::binary | std::ios::trunc) << h.text;
    const test::CliRun r = test::run_akv({"verify", bad});
    EXPECT_EQ(r.code, 2) << h.what;
    EXPECT_NE(r.err.find(bad + ": "), std::string::npos) << h.what << ": " << r.err;
    EXPECT_NE(r.err.find(h.needle), std::string::npos) << h.what << ": " << r.err;
  }
}

// IN5: under --json every error is one JSON object on stdout as well as the line on stderr.
TEST(IN5_ExitCodes, UnderJsonAnErrorIsJsonToo) {
  const test::CliRun e = test::run_akv({"witness", test::example(kConv), "--model", "tiny", "--evict", "9", "--json"});
  EXPECT_EQ(e.code, 2);
  const json j = json::parse(e.out);
  EXPECT_EQ(j["error"]["code"], "bad_input");
  EXPECT_NE(j["error"]["message"].get<std::string>().find("out of range"), std::string::npos) << e.out;
  const test::CliRun u = test::run_akv({"witness", test::example(kConv), "--threads", "x", "--json"});
  EXPECT_EQ(u.code, 2);
  EXPECT_EQ(json::parse(u.out)["error"]["code"], "usage");
  const test::CliRun plain = test::run_akv({"witness", test::example(kConv), "--model", "tiny", "--evict", "9"});
  EXPECT_EQ(plain.out, "") << "without --json stdout stays empty";
}
