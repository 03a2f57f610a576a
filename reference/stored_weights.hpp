// Weight matrices as the model file stores them (spec/kernels-cpu.md K15): the file's own
// blocks, never a float32 copy. A backend that needs float32 dequantizes what it reads, exactly
// (spec/gguf.md Q6): dense() here, dense_model() of reference/model.hpp.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace akv {

/// W (rows, cols) in ggml blocks: akv row r is file row source_row(r), whose cols elements
/// take row_bytes bytes at data + source_row(r) * row_bytes.
struct StoredMatrix {
  uint32_t type = 0;  // ggml type id (spec/gguf.md F4)
  int rows = 0, cols = 0;
  const uint8_t* data = nullptr;  // nullptr: no matrix (an untied classifier that is absent)
  size_t row_bytes = 0;
  int qk_head_dim = 0;  // > 0: rows un-permuted head by head as spec/gguf.md C3 (W_q, W_k)
  bool empty() const { return data == nullptr; }
  /// The file row akv row r comes from (C3's un-permutation when qk_head_dim > 0).
  int source_row(int r) const;
  const uint8_t* row(int r) const { return data + static_cast<size_t>(source_row(r)) * row_bytes; }
};

/// Within each head of `head_dim` rows, akv row r reads file row 2*(r mod hd/2) + r div (hd/2)
/// (spec/gguf.md C3: llama.cpp's converter interleaves the rotate-half pairs).
int qk_source_row(int r, int head_dim);

struct StoredLayer {
  StoredMatrix wq, wk, wv, wo, w1, w2, w3;  // as LayerWeights
};

/// The matrices of a model file (the norms stay float32 in Weights: they are small).
struct StoredWeights {
  StoredMatrix tok_emb;  // (vocab, hidden)
  std::vector<StoredLayer> layers;
  StoredMatrix wcls;  // (vocab, hidden); empty when the output is tied to tok_emb
  /// Dequantizes `n` elements (whole blocks) of ggml type `type` at `in` into out, bit-exact
  /// (spec/gguf.md Q1-Q9); set by the reader, which owns the formats.
  void (*dequantize)(uint32_t type, const uint8_t* in, size_t n, float* out) = nullptr;
  /// Keeps every matrix's bytes valid (the file's mapping).
  std::shared_ptr<const void> owner;
  /// Lets the OS drop the file's pages read so far (a backend that has packed its copy calls
  /// it): later reads fault them in again, unchanged. nullptr: nothing to drop.
  void (*drop_pages)(const void* owner) = nullptr;
  void release_pages() const {
    if (drop_pages != nullptr && owner) drop_pages(owner.get());
  }

  const StoredMatrix& classifier() const { return wcls.empty() ? tok_emb : wcls; }
  /// Row r of m (akv's order) as float32: out (m.cols,).
  void row(const StoredMatrix& m, int r, float* out) const { dequantize(m.type, m.row(r), static_cast<size_t>(m.cols), out); }
  /// The whole of m as float32, row-major (rows, cols): the values of reference/weights.hpp.
  std::vector<float> dense(const StoredMatrix& m) const;
};

/// IEEE binary16 bits -> binary32, exact for every value (spec/gguf.md Q1): subnormals
/// normalised, infinities kept, a NaN keeps its sign and payload (`payload << 13`).
float half_bits_to_float(uint16_t h);

}  // namespace akv
