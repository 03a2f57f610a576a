// T8: BPE merges that tie (the same pair at several places of a piece) against Hugging Face
// tokenizers, offline: tests/golden/bpe_ties holds a tokenizer built for ties and the ids
// tokenizers 0.23.3 gives for ~5000 strings (scripts/crosscheck-tokenizer-ties writes both).
#include <gtest/gtest.h>

#include <climits>
#include <map>
#include <nlohmann/json.hpp>

#include "readers/tokenizer/bpe_tokenizer.hpp"
#include "cli_support.hpp"
#include "support.hpp"

using namespace akv;
using nlohmann::json;

namespace {

std::string golden(const std::string& name) { return test::source_dir() + "/tests/golden/bpe_ties/" + name; }

// A second, plain BPE for the control: the lowest rank first, and among equal pairs the
// leftmost (T4) or the rightmost (a dropped tie-break), quadratic, on a piece of a and b.
std::vector<Token> naive_bpe(const std::string& piece, const json& model, bool leftmost) {
  std::map<std::pair<std::string, std::string>, int> rank;
  for (size_t r = 0; r < model["merges"].size(); ++r) {
    const json& m = model["merges"][r];
    rank[{m[0].get<std::string>(), m[1].get<std::string>()}] = static_cast<int>(r);
  }
  std::vector<std::string> parts;
  for (char c : piece) parts.emplace_back(1, c);
  for (;;) {
    int best = INT_MAX;
    size_t at = 0;
    for (size_t i = 0; i + 1 < parts.size(); ++i) {
      const auto it = rank.find({parts[i], parts[i + 1]});
      if (it == rank.end()) continue;
      if (it->second < best || (it->second == best && !leftmost)) best = it->second, at = i;
    }
    if (best == INT_MAX) break;
    parts[at] += parts[at + 1];
    parts.erase(parts.begin() + static_cast<std::ptrdiff_t>(at) + 1);
  }
  std::vector<Token> ids;
  for (const std::string& p : parts) ids.push_back(model["vocab"][p].get<Token>());
  return ids;
}

}  // namespace

TEST(T8_RankTies, EqualsHuggingFaceTokenizersOnEveryString) {
  const readers::BpeTokenizer tok = readers::BpeTokenizer::from_tokenizer_json(golden("tokenizer.json"));
  const json ids = json::parse(test::slurp(golden("ids.json")));
  ASSERT_GE(ids["cases"].size(), 5000u);
  size_t checked = 0;
  for (const json& c : ids["cases"]) {
    const std::string text = c[0].get<std::string>();
    EXPECT_EQ(tok.encode(text), c[1].get<std::vector<Token>>()) << "'" << text << "'";
    ++checked;
  }
  EXPECT_EQ(checked, ids["cases"].size());
}

// The control: the golden ids hold the tie-break. A BPE that merges the rightmost of equal
// pairs first differs from them on many strings, while the leftmost-first one equals them.
TEST(T8_RankTies, TheGoldenIdsTellTheTieBreak) {
  const json tj = json::parse(test::slurp(golden("tokenizer.json")));
  const json ids = json::parse(test::slurp(golden("ids.json")));
  size_t pieces = 0, rightmost_differs = 0;
  std::string example;
  for (const json& c : ids["cases"]) {
    const std::string text = c[0].get<std::string>();
    if (text.find(' ') != std::string::npos) continue;  // one piece: no pre-tokenizer needed
    ++pieces;
    const std::vector<Token> want = c[1].get<std::vector<Token>>();
    EXPECT_EQ(naive_bpe(text, tj["model"], true), want) << "'" << text << "'";
    if (naive_bpe(text, tj["model"], false) != want) {
      ++rightmost_differs;
      if (example.empty()) example = text;
    }
  }
  EXPECT_GE(pieces, 2000u);
  EXPECT_GT(rightmost_differs, pieces / 10) << "a vocabulary whose ties do not matter checks nothing";
  EXPECT_EQ(example, "aaa") << "the shortest: aa a merges, a aa does not";
}
