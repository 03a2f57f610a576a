// The a-posteriori enclosure behind `akv bounds --a-posteriori` (spec/bounds.md B17): the
// one reference template run on 267-bit intervals (verify/oracle/interval.hpp) encloses the
// real-valued model's next-token logits; each backend's own logits are then certified to be
// within a computed distance of them. A certificate for these logits of this backend on this
// input, not an a-priori bound for every conforming backend (B11): it holds on any model
// where the intervals stay narrow, small and the real ones included.
#pragma once
#include <nlohmann/json.hpp>

#include <span>
#include <string>
#include <vector>

#include "reference/kv_types.hpp"
#include "reference/model.hpp"

namespace akv::bounds {

/// The widest enclosure of an exact logit the check accepts, absolute (B17).
inline constexpr double kEnclosureWidthLimit = 1e-20;

/// One exact logit's enclosure [lo, hi] and, per backend, its value and certified error.
struct EnclosedLogit {
  double exact = 0;              // the enclosure's midpoint, rounded to the nearest double
  double width = 0;              // hi - lo, rounded up (+inf when an end is not finite)
  std::vector<float> values;     // per backend (PosterioriReport::backends' order)
  std::vector<double> certified; // per backend: max(value - lo, hi - value), rounded up >= |value - exact logit|
};

/// One backend's next-token logits against the enclosure.
struct PosterioriBackend {
  std::string name;
  double max_certified = 0;  // max over logits of the certified error
  double max_observed = 0;   // max over logits of |value - midpoint|
  double median_ratio = 0;   // median over logits of certified / observed (observed > 0)
  double max_ratio = 0;
  size_t non_finite = 0;     // NaN or Inf logits (arithmetic.md A5): a failure
};

struct PosterioriReport {
  std::string model;
  size_t tokens = 0;
  long bits = 0;                        // the intervals' precision
  std::vector<EnclosedLogit> logits;    // (vocab,)
  std::vector<PosterioriBackend> backends;
  double max_width = 0, median_width = 0;
  size_t wide = 0;                      // logits whose enclosure is wider than kEnclosureWidthLimit or not finite
  long bits_needed = 0;                 // when wide and every width finite: bits + log2(max_width / limit) + 8;
                                        // 2 bits when a width is not finite; 0 when not wide
  double ms_backends = 0, ms_enclosure = 0;

  /// Every logit enclosed within kEnclosureWidthLimit, at least one backend, no backend
  /// logit NaN or Inf.
  bool sound() const;
  /// "SOUND", "WIDE" (some enclosure too wide to certify: B15's vacuous case) or "VIOLATED"
  /// (a backend's logit is not finite).
  std::string verdict() const;
};

/// Runs `tokens` (1 <= n <= max_ctx, ids in [0, vocab)) through each backend of `backends`
/// (runtime/backends.hpp names) and the interval forward pass; `model_name` as reports print it.
/// Error(kEmptyInput / kInvalidToken / kContextOverflow) on bad tokens; a backend's error passes through.
/// `bits`: the intervals' precision (oracle::interval_logits); a WIDE verdict names the bits that
/// would do (bits_needed).
/// `kv`: the cache type the backends run (spec/state.md S5); the intervals enclose the exact
/// model, whose cache keeps every value, so a typed backend's certificate includes its rounding.
/// A backend that does not run the type is left out.
PosterioriReport run_a_posteriori(const std::shared_ptr<const Model>& model, std::span<const Token> tokens,
                                  const std::vector<std::string>& backends, const std::string& model_name,
                                  long bits = 267, KvType kv = KvType::kF32);

/// Summary keys and "logits": [{index, exact, width, values, certified}].
nlohmann::json to_json(const PosterioriReport& r);
/// The eight largest logits, each backend's summary line and the verdict line.
std::string to_text(const PosterioriReport& r);

}  // namespace akv::bounds
