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
  std::shared_ptr<const RopeTable> rope_local;  // the sliding layers' table (M19), or null: `rope`

  /// The RoPE table layer l reads (M19: sliding layers have their own base).
  const RopeTable& rope_for(int l) const { return (rope_local && config.sliding(l)) ? *rope_local : *rope; }
};

/// The RoPE tables of `c` (M6, M19, M20): the global one, and the sliding layers' one when its
/// base differs (else null).
std::shared_ptr<const RopeTable> make_global_rope(const Config& c);
std::shared_ptr<const RopeTable> make_local_rope(const Config& c);

using Model = ModelT<float>;

/// The synthetic model `cfg` with weight seed `seed` (M3) and its RoPE table for max_ctx.
std::shared_ptr<const Model> make_model(const Config& cfg, uint64_t seed);

/// The same model in another scalar type, sharing the RoPE table (float values, exact in T).
template <class T>
ModelT<T> convert_model(const Model& m) {
  return ModelT<T>{m.config, convert_weights<T>(m.weights), m.rope, m.rope_local};
}

}  // namespace akv
