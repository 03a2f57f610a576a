// The inspection commands other implementations are compared through: `akv tokenize`,
// `akv logits` (spec/operations.md O7) and `akv rope` (spec/model.md M6), on the tiny model.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli_support.hpp"
#include "reference/session.hpp"
#include "support.hpp"
#include "runtime/backends.hpp"
#include "verify/witness.hpp"

using namespace akv;
using test::run_akv;

namespace {
const std::string kConv = "ja01_banking_bill_important_instructions.json";

// A float32 .npy file: its shape and data; fails the test on any other header.
struct Npy {
  std::vector<size_t> shape;
  std::vector<float> data;
};
Npy read_npy(const std::string& path) {
  const std::string b = test::slurp(path);
  Npy n;
  EXPECT_GE(b.size(), 10u);
  if (b.size() < 10) return n;
  EXPECT_EQ(b.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  const size_t hl = static_cast<unsigned char>(b[8]) | static_cast<size_t>(static_cast<unsigned char>(b[9])) << 8;
  EXPECT_EQ((10 + hl) % 64, 0u) << "header padded to 64 bytes";
  const std::string h = b.substr(10, hl);
  EXPECT_NE(h.find("'descr': '<f4'"), std::string::npos) << h;
  EXPECT_NE(h.find("'fortran_order': False"), std::string::npos) << h;
  const size_t open = h.find("'shape': (") + 10, close = h.find(')', open);
  std::string dims = h.substr(open, close - open);
  size_t count = 1;
  for (size_t at = 0; at < dims.size();) {
    const size_t comma = dims.find(',', at);
    const std::string d = dims.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    if (d.find_first_not_of(' ') != std::string::npos) {
      n.shape.push_back(std::stoul(d));
      count *= n.shape.back();
    }
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  EXPECT_EQ(b.size(), 10 + hl + count * 4) << "data size matches the shape";
  n.data.resize(count);
  if (b.size() == 10 + hl + count * 4) std::memcpy(n.data.data(), b.data() + 10 + hl, count * 4);
  return n;
}
}  // namespace

TEST(O7_LogitsCommand, AllRowsAndTheLastRowAgreeWithTheSession) {
  const std::string all_path = ::testing::TempDir() + "akv_logits_all.npy", last_path = ::testing::TempDir() + "akv_logits_last.npy";
  const auto a = run_akv({"logits", test::example(kConv), "--model", "tiny", "--positions", "all", "--out", all_path});
  ASSERT_EQ(a.code, 0) << a.err;
  const auto l = run_akv({"logits", test::example(kConv), "--model", "tiny", "--out", last_path});
  ASSERT_EQ(l.code, 0) << l.err;
  const Npy all = read_npy(all_path), last = read_npy(last_path);
  // The session the witness builds: one span per message, every row.
  auto cpu = make_backend("cpu", test::tiny());
  Session s(*cpu);
  std::vector<float> rows;
  for (size_t i = 0; const auto& span : test::spans_of(kConv)) {
    const auto r = s.append(i++, span);
    rows.insert(rows.end(), r.begin(), r.end());
  }
  ASSERT_EQ(all.shape, (std::vector<size_t>{s.size(), 288}));
  ASSERT_EQ(last.shape, (std::vector<size_t>{1, 288}));
  EXPECT_EQ(std::memcmp(all.data.data(), rows.data(), rows.size() * 4), 0);
  EXPECT_EQ(std::memcmp(last.data.data(), s.logits().data(), 288 * 4), 0);
  std::remove(all_path.c_str());
  std::remove(last_path.c_str());
}

TEST(O7_LogitsCommand, BadRequestsAreExitTwoAndWriteNothing) {
  const std::string out = ::testing::TempDir() + "akv_logits_never.npy";
  std::remove(out.c_str());
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"logits", test::example(kConv), "--model", "tiny"},  // neither --out nor --json
        std::vector<std::string>{"logits", test::example(kConv), "--model", "tiny", "--json", "--out", out},
        std::vector<std::string>{"logits", test::example(kConv), "--model", "tiny", "--positions", "first", "--out", out},
        std::vector<std::string>{"logits", test::example(kConv), "--model", "nosuch", "--out", out},
        std::vector<std::string>{"logits", test::example(kConv), "--model", "tiny", "--out", "/nonexistent/dir/x.npy"}}) {
    const auto r = run_akv(args);
    EXPECT_EQ(r.code, 2) << args.back() << ": " << r.err;
    EXPECT_TRUE(test::empty_or_json_error(r.out)) << r.out;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  EXPECT_FALSE(std::ifstream(out).good()) << "a refused request writes no file";
}

TEST(M6_RopeCommand, WritesTheModelsOneTable) {
  const std::string path = ::testing::TempDir() + "akv_rope.npy";
  const auto r = run_akv({"rope", "--model", "tiny", "--positions", "40", "--out", path});
  ASSERT_EQ(r.code, 0) << r.err;
  const Npy n = read_npy(path);
  const RopeTable& t = *test::tiny()->rope;
  const size_t half = static_cast<size_t>(t.head_dim / 2);
  ASSERT_EQ(n.shape, (std::vector<size_t>{2, 40, half}));
  EXPECT_EQ(std::memcmp(n.data.data(), t.cos_rows(40), 40 * half * 4), 0);
  EXPECT_EQ(std::memcmp(n.data.data() + 40 * half, t.sin_rows(40), 40 * half * 4), 0);
  const auto big = run_akv({"rope", "--model", "tiny", "--positions", "99999999", "--out", path + "2"});
  EXPECT_EQ(big.code, 2);
  EXPECT_NE(big.err.find("--positions 99999999"), std::string::npos) << big.err;
  std::remove(path.c_str());
}

TEST(IN1_TokenizeCommand, TheSpansTheWitnessAppends) {
  const auto r = run_akv({"tokenize", test::example(kConv), "--model", "tiny", "--json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["encoder"], "fixture");
  std::vector<Token> want;
  const auto spans = test::spans_of(kConv);
  ASSERT_EQ(j["spans"].size(), spans.size());
  for (size_t i = 0; i < spans.size(); ++i) {
    EXPECT_EQ(j["spans"][i]["message"].get<size_t>(), i);
    EXPECT_EQ(j["spans"][i]["start"].get<size_t>(), want.size());
    EXPECT_EQ(j["spans"][i]["length"].get<size_t>(), spans[i].size());
    want.insert(want.end(), spans[i].begin(), spans[i].end());
  }
  EXPECT_EQ(j["tokens"].get<std::vector<Token>>(), want);
}
