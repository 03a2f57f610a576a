// The model config of a llama-architecture GGUF file (spec/gguf.md C1).
#pragma once
#include <string>

#include "readers/gguf/gguf.hpp"
#include "reference/config.hpp"

namespace akv::readers {

/// Builds the Config of a llama-arch GGUF file from its `llama.*` metadata and the shapes of
/// `token_embd.weight` / `output.weight` (absent: tied output). `name` becomes Config::name.
/// Throws Error(kBadModel) naming the key for another architecture, a missing or mistyped key,
/// a size out of [1, 2^31), head counts that do not divide, a RoPE that akv does not run
/// (partial rotary, scaling), or an embedding/output shape that disagrees with the metadata.
Config config_from_gguf(const GgufFile& f, const std::string& name);

}  // namespace akv::readers
