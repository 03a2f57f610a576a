// A model instance: config, weights, and the one RoPE table (spec/model.md M1-M6).
#pragma once
#include <cstdint>
#include <memory>

#include "reference/config.hpp"
#include "reference/rope.hpp"
#include "reference/stored_weights.hpp"
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

  /// The matrices as the model file stores them (spec/kernels-cpu.md K15), or nullptr. When
  /// set and weights.tok_emb is empty, `weights` holds only the norms: the cpu backend packs
  /// from here, and every other reader of float32 goes through dense_model / dense_weights.
  std::shared_ptr<const StoredWeights> stored;
};

/// The RoPE tables of `c` (M6, M19, M20): the global one, and the sliding layers' one when its
/// base differs (else null).
std::shared_ptr<const RopeTable> make_global_rope(const Config& c);
std::shared_ptr<const RopeTable> make_local_rope(const Config& c);

using Model = ModelT<float>;

/// Whether m's matrices are float32 in m.weights (false: only in m.stored).
bool has_dense_weights(const Model& m);

/// m.weights with every matrix float32: a copy of m.weights, or its norms with the matrices
/// dequantized from m.stored (exact, spec/gguf.md Q6). Memory: 4 bytes a parameter.
Weights<float> dense_weights(const Model& m);

/// m itself when has_dense_weights(*m); else the same model with float32 matrices
/// (dense_weights), made once per model and shared while any holder keeps it (K15: only a
/// backend that needs float32 makes it).
std::shared_ptr<const Model> dense_model(const std::shared_ptr<const Model>& m);

/// The synthetic model `cfg` with weight seed `seed` (M3) and its RoPE table for max_ctx.
std::shared_ptr<const Model> make_model(const Config& cfg, uint64_t seed);

/// The same model in another scalar type, sharing the RoPE table (float values, exact in T).
template <class T>
ModelT<T> convert_model(const Model& m) {
  if (!has_dense_weights(m)) return ModelT<T>{m.config, convert_weights<T>(dense_weights(m)), m.rope, m.rope_local, nullptr};
  return ModelT<T>{m.config, convert_weights<T>(m.weights), m.rope, m.rope_local, nullptr};
}

}  // namespace akv
