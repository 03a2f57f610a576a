// The synthetic models the checks run on, built once per process (spec/model.md M2).
#pragma once
#include <cstdint>
#include <memory>

#include "reference/model.hpp"

namespace akv::check {

/// The tiny model, weight seed 1.
std::shared_ptr<const Model> tiny_model();
/// The small model with weight seed `seed` (the checks use 1 and 3).
std::shared_ptr<const Model> small_model(uint64_t seed = 1);

}  // namespace akv::check
