// The scalar operations the reference template needs beyond + - * / (spec/arithmetic.md A3).
// float uses akv::exp and IEEE sqrt; verify/ specialises this for the MPFR oracle and for
// the error-carrying enclosure type.
#pragma once
#include <cmath>

#include "reference/exp.hpp"

namespace akv {

template <class T>
struct ScalarOps;

template <>
struct ScalarOps<float> {
  static float exp(float x) { return akv::exp(x); }
  static float sqrt(float x) { return std::sqrt(x); }  // IEEE correctly rounded
  static float max(float a, float b) { return a < b ? b : a; }
};

}  // namespace akv
