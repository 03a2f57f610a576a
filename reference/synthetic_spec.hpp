// Synthetic model shapes beyond the named configs, as a one-line spec string (spec/model.md
// M12): how the property suite's drawn shapes are printed and re-run by `akv witness --model`.
#pragma once
#include <string>

#include "reference/config.hpp"

namespace akv {

/// The prefix that marks a spec string: "synthetic:hidden=40,layers=2,heads=5,kv_heads=1,head_dim=8,ffn=72,vocab=288".
inline constexpr const char* kSyntheticPrefix = "synthetic:";

/// Whether `s` starts with kSyntheticPrefix (then synthetic_config parses it or names the fault).
bool is_synthetic_spec(const std::string& s);

/// The Config of a spec string: kSyntheticPrefix, then the fields hidden, layers, heads,
/// kv_heads, head_dim, ffn, vocab as `name=decimal`, comma-separated, each exactly once, in any
/// order. The other fields are the named configs' (max_ctx 16384, rope_theta 10000, rms_eps
/// 1e-5, qk_gain 2); name is the canonical spec (synthetic_spec). Throws Error(kBadInput)
/// naming the field for: a missing, repeated or unknown field, a value that is not a decimal
/// in its range (hidden 1-8192, layers 1-64, heads 1-256, kv_heads 1-256 dividing heads,
/// head_dim 2-512 and even, ffn 1-32768, vocab 288-65536), or more than 2^28 weights in all.
Config synthetic_config(const std::string& spec);

/// The canonical spec string of c's shape, fields in the order above.
std::string synthetic_spec(const Config& c);

}  // namespace akv
