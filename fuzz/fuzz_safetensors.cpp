// libFuzzer target for the Hugging Face readers (spec/safetensors.md H1-H4, H6;
// docs/fuzzing.md). Input starting with '{' is a config.json: config_from_hf_json returns or
// throws akv::Error(kBadModel) with a one-line message. Any other input is a safetensors file:
// SafetensorsFile::parse returns or throws likewise; a parsed file's tensors tile its data
// section exactly (H3), and each F32 / F16 / BF16 tensor converts to n_elements floats (H4).
// Anything else (a crash, a sanitizer report, another exception) is a finding.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "fuzz/finding.hpp"
#include "readers/hf/hf_config.hpp"
#include "readers/hf/safetensors.hpp"
#include "reference/error.hpp"

namespace {
using akv::fuzz::finding;


void config(const uint8_t* data, size_t size) {
  try {
    const akv::Config c = akv::readers::config_from_hf_json({reinterpret_cast<const char*>(data), size}, "config.json", "fuzz");
    if (c.hidden < 1 || c.n_layers < 1 || c.n_heads < 1 || c.n_kv_heads < 1 || c.head_dim < 2 || c.n_heads % c.n_kv_heads != 0 ||
        !(c.rope_theta > 0.0f) || !(c.rms_eps > 0.0f))
      finding("a config out of range");
  } catch (const akv::Error& e) {
    akv::fuzz::check_bad_model(e);
  }
}

void safetensors(const uint8_t* data, size_t size) {
  try {
    const auto f = akv::readers::SafetensorsFile::parse(std::vector<uint8_t>(data, data + size), "fuzz.safetensors");
    uint64_t at = 0;
    for (const akv::readers::SafeTensor& t : f.tensors()) {
      if (t.begin != at || t.end < t.begin) finding("tensors that do not tile the data section");
      at = t.end;
      if (t.n_elements * t.elem_bytes != t.end - t.begin) finding("a span that is not shape x dtype");
      if (t.dtype == "F32" || t.dtype == "F16" || t.dtype == "BF16")
        if (akv::readers::safetensors_to_float(t, f.name()).size() != t.n_elements) finding("a tensor of the wrong size");
    }
    if (f.data_offset() + at != f.file_size()) finding("bytes after the last tensor");
  } catch (const akv::Error& e) {
    akv::fuzz::check_bad_model(e);
  }
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 0 && data[0] == '{')
    config(data, size);
  else
    safetensors(data, size);
  return 0;
}
