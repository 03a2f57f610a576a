// The end-to-end check behind `akv bounds` (spec/bounds.md B11): one token sequence through
// every backend, the affine enclosure and the MPFR oracle; per logit, the observed errors and
// the proven bound, which holds for every conforming backend.
#pragma once
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "reference/kv_types.hpp"
#include "reference/model.hpp"

namespace akv::bounds {

struct LogitBound {
  float value = 0;   // the float reference's logit
  double exact = 0;  // the MPFR oracle's, rounded to double
  double error = 0;  // |value - exact|, rounded up
  double bound = 0;  // the enclosure's proven bound on |b - exact| for every conforming backend b
};

/// One backend's next-token logits against the oracle and the bound.
struct BackendBound {
  std::string name;
  double max_error = 0;     // max over logits of |logit - exact|, rounded up
  double max_fraction = 0;  // max over logits of error / bound (<= 1 when sound)
  size_t violations = 0;    // logits with error > bound (1 + 2^-200)
};

/// Knobs of run_bounds.
struct BoundsOptions {
  size_t max_terms = 2048;  // terms one enclosed value keeps (AffineContext); more: tighter, slower
  bool all_backends = true; // also run every other backend of backend_names() against the bound
  /// The cache type of every backend's run and of the enclosure (spec/state.md S5, bounds.md
  /// B18); the exact logits are the model's whose cache keeps every value (f32, exactly).
  KvType kv = KvType::kF32;
};

struct BoundsReport {
  std::string model;
  uint64_t seed = 0;
  size_t tokens = 0;
  std::string kv_type = "f32";  // the cache type of the backends and the enclosure (B18)
  long oracle_bits = 0;
  size_t max_terms = 0, symbols = 0;  // the enclosure's term budget and the symbols it made
  std::vector<LogitBound> logits;  // (vocab,), the next-token logits after the last token
  std::vector<BackendBound> backends;  // "reference" first
  bool enclosure_bitwise = false;  // the enclosure's values are the float reference's bits
  size_t violations = 0;           // logits of any backend with error > bound (1 + 2^-200) (B12's slack)
  size_t exact_logits = 0;         // logits with error 0 (no ratio)
  size_t vacuous = 0;              // logits whose bound is +inf or NaN: nothing was checked (B15)
  size_t non_finite = 0;           // backend outputs that are NaN or Inf: each a violation (arithmetic.md A5)
  double max_error = 0, max_bound = 0;
  double min_ratio = 0, median_ratio = 0, max_ratio = 0;  // bound / error over error > 0
  double ms_float = 0, ms_enclosure = 0, ms_oracle = 0;

  /// Exit-0 condition of `akv bounds`: every backend's every logit within its bound, every
  /// bound finite (a +inf bound holds vacuously and checks nothing, B15), the enclosure's
  /// values bitwise the reference's.
  bool sound() const { return violations == 0 && enclosure_bitwise && vacuous == 0; }

  /// "SOUND", "VIOLATED" (a bound broken or the enclosure's values not the reference's) or
  /// "VACUOUS" (no violation, but some bound is +inf: the check checked nothing there).
  std::string verdict() const {
    if (violations > 0 || !enclosure_bitwise) return "VIOLATED";
    return vacuous > 0 ? "VACUOUS" : "SOUND";
  }
};

/// Error(kEmptyInput / kContextOverflow / kInvalidToken) unless 1 <= n <= max_ctx and every id
/// is in [0, vocab).
void check_tokens(const Config& c, std::span<const Token> tokens);

/// The next-token logits (vocab,) of backend `name` (runtime/backends.hpp) after `tokens` on a
/// fresh cache of type `kv`, in one forward call. Error(kBadInput) when the backend does not run it.
std::vector<float> next_logits(const std::string& name, const std::shared_ptr<const Model>& model,
                               std::span<const Token> tokens, KvType kv = KvType::kF32);

/// Runs `tokens` (n >= 1, each in [0, vocab), n <= max_ctx) through the backends, the
/// enclosure (ref::forward_token<Aff>) and the oracle (ref::forward_token<Real>).
/// Throws Error(kEmptyInput / kInvalidToken / kContextOverflow) on bad input.
BoundsReport run_bounds(const std::shared_ptr<const Model>& model, uint64_t seed, std::span<const Token> tokens,
                        const BoundsOptions& opt = {});

/// The report as JSON: summary keys and "logits": [{index, value, exact, error, bound, ratio}].
nlohmann::json to_json(const BoundsReport& r);

/// One line per logit and a summary line.
std::string to_text(const BoundsReport& r);

}  // namespace akv::bounds
