// Every op of every layer, on a model's own tensors (spec/bounds.md B16): the reference's
// forward pass over a token sequence, op by op, and each optimized op table given the very
// inputs the reference's op got. Each output is held to B_ref + B_opt of the reference's
// (B10) with the per-op theorems evaluated on those inputs (B1, B2, B14), or to the
// reference's bits where the contract fixes them (RoPE B3, SwiGLU B8, the residual add M11).
// Sound on any model: no error is carried from one op to the next.
#pragma once
#include <nlohmann/json.hpp>

#include <span>
#include <string>
#include <vector>

#include "reference/model.hpp"
#include "verify/check/ops.hpp"

namespace akv::check {

/// One op of one layer on one table: what was compared and how close it came to its bound.
struct OpStat {
  std::string table;         // the op table's label: "avx2", "cuda_emu", "plugin_NAME"
  std::string op;            // "attn_norm", "wq", "wk", "wv", "rope_q", "rope_k", "attention", "wo",
                             // "attn_residual", "ffn_norm", "w1", "w3", "swiglu", "w2",
                             // "ffn_residual"; after the last layer "final_norm", "logits"
  std::string clause;        // the theorem: "B1", "B2", "B14"; "B3", "B8", "M11" for the bitwise ops
  bool bitwise = false;      // held to the reference's bits (bound 0)
  int layer = 0;             // 0 .. n_layers - 1; n_layers for final_norm and logits
  size_t elements = 0;       // outputs compared
  size_t over = 0;           // outputs beyond their bound, non-finite, or (bitwise) other bits
  size_t vacuous = 0;        // outputs whose bound is +inf or NaN (B15: a check of nothing)
  double max_ratio = 0;      // largest |opt - ref| / (B_ref + B_opt); bitwise: 0, or +inf on a difference
  double max_abs = 0;        // largest |opt - ref|
  double bound_at_max = 0;   // the bound of the output with the largest ratio
  int worst_row = -1;        // its token position
  int worst_col = -1;        // its element in the op's output row
};

/// The whole check: one OpStat per (table, layer, op), tables in the order given.
struct PerOpReport {
  std::string model;                    // as the caller names it
  std::string kv_type = "f32";          // the cache type (spec/state.md S5): how the K/V rows are stored
  size_t tokens = 0;                    // tokens run
  size_t from = 0;                      // the first position checked (earlier ones: the reference alone)
  std::vector<std::string> tables;      // labels of the tables checked
  std::vector<std::string> unavailable; // "label: why" of tables this machine cannot run
  std::vector<OpStat> stats;
  std::string logits_sha256;            // SHA-256 of the reference's logits of the checked rows (n - from,
                                        // vocab), as the reference backend computes them (the trace is the reference)
  double seconds = 0;

  size_t over() const;
  size_t vacuous() const;
  /// At least one table and one comparison, nothing over, no bound vacuous.
  bool sound() const;
  /// "SOUND"; "VIOLATED" when an output is over its bound; else "VACUOUS" (an infinite bound,
  /// or nothing compared). to_json and to_text both print it.
  std::string verdict() const;
  /// The stat with the largest ratio among the non-bitwise ones (nullptr when none).
  const OpStat* worst() const;
};

/// Runs `tokens` (1 .. max_ctx of them, every id < vocab) through the reference: positions
/// [0, from) token by token (ref::forward_token, for their keys and values), then [from, n) in
/// one prefill through the reference's ops, after each of which every available table in
/// `tables` (the reference's own is skipped: it would be compared with itself) runs on the same
/// inputs. Cost: one reference forward pass, one per table and one of bounds in double over the
/// checked rows (attention's over all their keys). Error(kEmptyInput / kInvalidToken /
/// kContextOverflow) on bad tokens, Error(kBadInput) when from >= n.
/// With a cache type `kv` other than f32 (spec/state.md S5): the K/V rows are stored as that type
/// (the prefix's too), each table's stored bytes are compared with the reference's ("kv_store",
/// S6/S7, bitwise), each stored value with the float32 value it rounds ("kv_round", within B18),
/// and attention reads the stored rows as float32 (S8) on both sides.
PerOpReport per_op_check(const Model& m, std::span<const Token> tokens, const std::vector<OpTable>& tables,
                         const std::string& model_name, size_t from = 0, KvType kv = KvType::kF32);

/// Every OpStat, with the summary (sound, over, vacuous, worst).
nlohmann::json to_json(const PerOpReport& r);
/// Per table and op, the largest ratio over the layers (and its layer), then the verdict line:
/// "SOUND", "VIOLATED: table op layer L row R col C ..." or "VACUOUS".
std::string to_text(const PerOpReport& r);

}  // namespace akv::check
