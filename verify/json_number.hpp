// A float in a JSON result (spec/arithmetic.md A5): JSON has no NaN or Inf, and nlohmann writes
// them as null, which a reader takes for "no value". akv writes a finite number as a number and
// a non-finite one as the string "nan", "inf" or "-inf", and a result that holds one never passes.
#pragma once
#include <cmath>
#include <nlohmann/json.hpp>

namespace akv {

/// x as a JSON number when finite, else the string "nan", "inf" or "-inf" (never null).
inline nlohmann::json json_number(double x) {
  if (std::isfinite(x)) return x;
  if (std::isnan(x)) return "nan";
  return x > 0 ? "inf" : "-inf";
}

}  // namespace akv
