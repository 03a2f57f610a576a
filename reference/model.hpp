// A model instance: config, weights, and the one RoPE table (spec/model.md M1-M6).
#pragma once
#include <cstdint>
#include <memory>

#include "reference/config.hpp"
#include "reference/rope.hpp"
#include "reference/weights.hpp"

namespace akv {

template <class T>
struct ModelT {
  Config config;
  Weights<T> weights;
  std::shared_ptr<const RopeTable> rope;  // shared by every backend and scalar type
};

using Model = ModelT<float>;

/// The synthetic model `cfg` with weight seed `seed` (M3) and its RoPE table for max_ctx.
std::shared_ptr<const Model> make_model(const Config& cfg, uint64_t seed);

/// The same model in another scalar type, sharing the RoPE table (float values, exact in T).
template <class T>
ModelT<T> convert_model(const Model& m) {
  return ModelT<T>{m.config, convert_weights<T>(m.weights), m.rope};
}

}  // namespace akv
