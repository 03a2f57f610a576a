// What a cache type costs in accuracy (spec/leakage.md L11): the same conversation through f32
// and through f16 or q8_0 caches (spec/state.md S5-S8), on the same backend, compared after the
// generation prompt as L9 compares an eviction policy with never-shown: the next-token logits
// (max|delta|, KL, top-1, rank) and a greedy continuation.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "reference/chat.hpp"
#include "reference/kv_types.hpp"
#include "runtime/backends.hpp"

namespace akv {

struct KvCostOptions {
  std::string model = "smollm2";
  uint64_t seed = 1;
  std::string backend = "cpu";
  BackendOptions backend_options;
  std::vector<KvType> types = {KvType::kF16, KvType::kQ8_0};  // each against f32
  size_t continuation = 64;  // greedy tokens decoded per session
};

/// One type against f32 on one conversation.
struct KvTypeCost {
  KvType type = KvType::kF16;
  float max_abs = 0;        // max|q - p| of the next-token logits; NaN when not comparable (A5)
  size_t non_finite = 0;
  double kl = 0;            // KL(f32 || type), binary64
  bool top1_agree = false;
  size_t rank_of_f32_top = 0;
  int64_t first_diff = -1;  // first greedy token that differs from f32's; -1: none of them
  size_t bytes_per_token = 0;  // K and V of every layer, as stored
  std::string continuation_text;
};

struct KvCostReport {
  std::string file, model, backend, isa;
  size_t tokens = 0;              // the conversation's, before the generation prompt
  size_t f32_bytes_per_token = 0;
  std::string f32_continuation_text;
  std::vector<KvTypeCost> types;
};

/// Runs `conv` (every message, the generation prompt, `continuation` greedy tokens) once per
/// type and once in f32 on fresh sessions of one backend. Errors: those of the witness for the
/// model and backend; kBadInput when a type cannot store the model (check_kv_type) or the
/// backend does not run it; kContextOverflow when it does not fit.
KvCostReport run_kv_cost(const Conversation& conv, const std::string& file, const KvCostOptions& opt);

nlohmann::json to_json(const KvCostReport& r);
/// The Markdown table of docs/leakage.md "Cache types": one row per conversation and type.
std::string kv_cost_markdown(const std::vector<KvCostReport>& reports);

}  // namespace akv
