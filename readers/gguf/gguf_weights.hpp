// akv's float32 weights from a llama-arch GGUF file (spec/gguf.md C3): every tensor
// dequantized (Q1-Q5), laid out as spec/model.md M4, W_q and W_k rows un-permuted.
#pragma once
#include <memory>
#include <string>

#include "readers/gguf/gguf.hpp"
#include "reference/config.hpp"
#include "reference/model.hpp"
#include "reference/weights.hpp"

namespace akv::readers {

/// Row r of W_q / W_k as llama.cpp's converter stores it -> the row akv (rotate-half, M6) reads
/// there: within each head of `head_dim` rows, file row 2i + j holds akv row j*head_dim/2 + i
/// (j in {0, 1}). Returns the file row that akv row `r` comes from.
int gguf_qk_source_row(int r, int head_dim);

/// The weights of `cfg` (from config_from_gguf on the same file). Tensors: token_embd,
/// output_norm, output (absent when cfg.tied_output: wcls is then empty and classifier() reads tok_emb),
/// blk.L.{attn_norm, attn_q, attn_k, attn_v, attn_output, ffn_norm, ffn_gate, ffn_down, ffn_up}.
/// Throws Error(kBadModel) naming the tensor when one is missing, has other dims, or a type
/// akv does not dequantize. Memory: the float32 weights (4 bytes a parameter).
Weights<float> weights_from_gguf(const GgufFile& f, const Config& cfg);

/// The same checks as weights_from_gguf, but the matrices stay in the file (spec/kernels-cpu.md
/// K15): `out` gets them as StoredMatrix views into f's bytes (kept alive by out.owner); the
/// returned Weights hold only the norms. Memory: the norms, and the file's pages while held.
Weights<float> stored_weights_from_gguf(const GgufFile& f, const Config& cfg, StoredWeights& out);

/// Opens `path`, builds its config (named `name`), stored weights (the matrices in the file's
/// blocks, stored_weights_from_gguf; dense_model() gives float32) and RoPE table.
std::shared_ptr<const Model> load_gguf_model(const std::string& path, const std::string& name);
/// The same from a file already open.
std::shared_ptr<const Model> load_gguf_model(const GgufFile& f, const std::string& name);

}  // namespace akv::readers
