// libFuzzer target for the GGUF reader (spec/gguf.md F2-F7, C1, C3; docs/fuzzing.md).
// For any bytes: GgufFile::parse either returns or throws akv::Error(kBadModel) with a
// one-line message; a parsed file has every tensor inside it; config_from_gguf and
// weights_from_gguf on it return or throw kBadModel the same way, and weights they return
// have the shapes of the config. Anything else (a crash, a sanitizer report, another
// exception) is a finding. The RoPE table (load_gguf_model's last step) is not built: its size
// is the config's context length, not the file's.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string_view>
#include <vector>

#include "fuzz/finding.hpp"
#include "readers/gguf/dequant.hpp"
#include "readers/gguf/gguf.hpp"
#include "readers/gguf/gguf_config.hpp"
#include "readers/gguf/gguf_weights.hpp"
#include "reference/error.hpp"

namespace {
using akv::fuzz::finding;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::optional<akv::readers::GgufFile> f;
  try {
    f.emplace(akv::readers::GgufFile::parse(std::vector<uint8_t>(data, data + size), "fuzz.gguf"));
  } catch (const akv::Error& e) {
    akv::fuzz::check_bad_model(e);
    return 0;
  }
  for (const akv::readers::TensorInfo& t : f->tensors()) {
    if (t.n_bytes > f->file_size() || f->data_offset() + t.offset > f->file_size() - t.n_bytes) finding("a tensor past the end");
    if (akv::readers::dequantize_supported(t.type) && akv::readers::dequantize(t).size() != t.n_elements) finding("a tensor of the wrong size");
  }
  try {
    const akv::Config c = akv::readers::config_from_gguf(*f, "fuzz");
    const akv::Weights<float> w = akv::readers::weights_from_gguf(*f, c);
    if (w.tok_emb.size() != static_cast<size_t>(c.vocab) * c.hidden || w.layers.size() != static_cast<size_t>(c.n_layers) ||
        akv::classifier(w).size() != w.tok_emb.size() || (c.tied_output && !w.wcls.empty()))
      finding("weights of the wrong shape");
  } catch (const akv::Error& e) {
    akv::fuzz::check_bad_model(e);
  }
  return 0;
}
