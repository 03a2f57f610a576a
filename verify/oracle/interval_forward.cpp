#include <cmath>
#include <optional>

#include "verify/oracle/interval.hpp"
#include "verify/oracle/oracle_forward.hpp"

namespace akv::oracle {

std::vector<Interval> interval_logits(const Model& model, std::span<const Token> tokens, long bits) {
  // Boost sets variable precision in decimal digits: enough of them for `bits` bits.
  const unsigned digits10 = static_cast<unsigned>(std::ceil(static_cast<double>(std::max(bits, 64L)) * std::log10(2.0))) + 1;
  const unsigned saved = Interval::default_precision();
  Interval::default_precision(digits10);
  std::optional<Model> dense;  // the oracle reads float32 weights (spec/kernels-cpu.md K15)
  if (!has_dense_weights(model)) dense = Model{model.config, dense_weights(model), model.rope, model.rope_local, nullptr};
  std::vector<Interval> out = last_logits<float, Interval>(dense ? *dense : model, tokens);
  Interval::default_precision(saved);
  return out;
}

}  // namespace akv::oracle
