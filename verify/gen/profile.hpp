// Size profiles of the generators (spec/properties.md "Profiles"): "ci" keeps 200 cases of
// every property within the CI budget; "long" reaches the model's whole context.
#pragma once
#include <cstddef>
#include <string>

namespace akv::gen {

struct Profile {
  std::string name;
  size_t max_spans = 40;        // spans per conversation, >= 1
  size_t max_span_len = 300;    // tokens per span, >= 0
  size_t max_total = 0;         // tokens per conversation on the tiny model
  size_t small_max_total = 0;   // tokens per conversation when the small model is drawn
  int small_per_mille = 0;      // how often the small model is drawn, out of 1000
  uint64_t max_seed = 1;        // weight seeds are drawn from [1, max_seed]
  size_t max_commands = 0;      // stateful test: commands per sequence
  size_t state_max_total = 0;   // stateful test: cache size bound (tiny; small uses small_max_total)
  int fill_per_mille = 0;       // how often a conversation is padded with a last span to exactly its budget
  std::string model;            // non-empty: every case runs on this model (runtime/models.hpp), budget max_total
  int vocab = 288;              // token ids are drawn from [0, vocab)
  int shape_per_mille = 0;      // how often a drawn shape (spec/model.md M12) replaces tiny/small
  size_t shape_max_total = 0;   // tokens per conversation (and stateful cache bound) on a drawn shape
  int min_threads = 1;          // backends with threads draw them from [min_threads, max_threads]
  int max_threads = 4;
};

/// "ci": tiny model up to 640 tokens, the small model 1 case in 25 with <= 24 tokens, a drawn
/// shape 1 case in 4 with <= 96 tokens; 1-4 threads.
Profile ci_profile();

/// "long": span lengths up to 2048 so a conversation reaches the 16384-token context.
/// Not run in CI; `akv campaign --profile long`.
Profile long_profile();

/// "real": the default real model (SmolLM2-135M-Instruct), token ids over its whole vocabulary,
/// conversations up to 160 tokens: E1 and I1 on real weights at a CI-sized cost.
Profile real_profile();
/// By name ("ci", "long", "real"). Throws Error(kBadInput) naming the profiles for any other.
Profile profile_by_name(const std::string& name);

}  // namespace akv::gen
