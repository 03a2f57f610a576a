#include "readers/hf/safetensors.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>

#include "readers/gguf/dequant.hpp"
#include "readers/gguf/ggml_type.hpp"
#include "readers/json_limited.hpp"
#include "reference/error.hpp"
#include "reference/strict.hpp"

namespace akv::readers {

using json = nlohmann::json;

namespace {

// The header nests at most three levels: the top object, a tensor's object, its shape array.
constexpr JsonLimits kHeaderJson{kMaxSafetensorsHeader, 3, "spec/safetensors.md H1"};
constexpr uint64_t kMaxBytes = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());

class Reader {
 public:
  explicit Reader(const std::string& file) : file_(file) {}

  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw Error(ErrorCode::kBadModel, file_ + ": " + field + ": " + what);
  }

  uint64_t unsigned_value(const json& v, const std::string& field) const {
    if (!v.is_number_unsigned()) fail(field, std::string("expected an integer >= 0, got ") + json_kind(v));
    return v.get<uint64_t>();
  }

  SafeTensor tensor(const std::string& name, const json& v, uint64_t data_size) const {
    const std::string t = "tensor " + quoted_name(name);
    if (name.empty()) fail("tensor ''", "empty tensor name");
    if (!v.is_object()) fail(t, std::string("expected an object {dtype, shape, data_offsets}, got ") + json_kind(v));
    for (const auto& [k, _] : v.items())
      if (k != "dtype" && k != "shape" && k != "data_offsets") fail(t + "." + printable(k, 40), "unknown field");
    for (const char* k : {"dtype", "shape", "data_offsets"})
      if (!v.contains(k)) fail(t + "." + k, "missing");

    SafeTensor out;
    out.name = name;
    const json& dt = v["dtype"];
    if (!dt.is_string()) fail(t + ".dtype", std::string("expected a string, got ") + json_kind(dt));
    out.dtype = dt.get<std::string>();
    out.elem_bytes = safetensors_dtype_bytes(out.dtype);
    if (out.elem_bytes == 0) fail(t + ".dtype", "unknown dtype " + quoted_name(out.dtype));

    const json& shape = v["shape"];
    if (!shape.is_array()) fail(t + ".shape", std::string("expected an array, got ") + json_kind(shape));
    if (shape.size() > kMaxSafetensorsRank)
      fail(t + ".shape", std::to_string(shape.size()) + " dimensions, more than " + std::to_string(kMaxSafetensorsRank));
    const uint64_t max_elements = kMaxBytes / out.elem_bytes;
    out.n_elements = 1;
    for (size_t i = 0; i < shape.size(); ++i) {
      const std::string f = t + ".shape[" + std::to_string(i) + "]";
      const uint64_t d = unsigned_value(shape[i], f);
      if (d != 0 && out.n_elements > max_elements / d)
        fail(f, "element count overflows (" + std::to_string(out.n_elements) + " x " + std::to_string(d) + ")");
      out.shape.push_back(d);
      out.n_elements *= d;
    }

    const json& off = v["data_offsets"];
    if (!off.is_array() || off.size() != 2)
      fail(t + ".data_offsets", std::string("expected [begin, end], got ") + (off.is_array() ? "an array of " + std::to_string(off.size()) : json_kind(off)));
    out.begin = unsigned_value(off[0], t + ".data_offsets[0]");
    out.end = unsigned_value(off[1], t + ".data_offsets[1]");
    if (out.end < out.begin)
      fail(t + ".data_offsets", "end " + std::to_string(out.end) + " before begin " + std::to_string(out.begin));
    if (out.end > data_size)
      fail(t + ".data_offsets", "end " + std::to_string(out.end) + " past the data section (" + std::to_string(data_size) + " bytes)");
    const uint64_t bytes = out.n_elements * out.elem_bytes;  // < 2^63 by max_elements
    if (out.end - out.begin != bytes)
      fail(t + ".data_offsets", "span of " + std::to_string(out.end - out.begin) + " bytes, but shape x " + out.dtype + " is " +
                                    std::to_string(bytes) + " bytes");
    return out;
  }

 private:
  const std::string& file_;
};

}  // namespace

uint32_t safetensors_dtype_bytes(std::string_view d) {
  if (d == "BOOL" || d == "U8" || d == "I8" || d == "F8_E5M2" || d == "F8_E4M3") return 1;
  if (d == "U16" || d == "I16" || d == "F16" || d == "BF16") return 2;
  if (d == "U32" || d == "I32" || d == "F32") return 4;
  if (d == "U64" || d == "I64" || d == "F64") return 8;
  return 0;
}

SafetensorsFile::SafetensorsFile(std::unique_ptr<Bytes> bytes, std::string name) : bytes_(std::move(bytes)), name_(std::move(name)) {}

SafetensorsFile SafetensorsFile::open(const std::string& path) {
  SafetensorsFile f(map_file(path), path);
  f.parse_all();
  return f;
}

SafetensorsFile SafetensorsFile::parse(std::vector<uint8_t> bytes, const std::string& name) {
  SafetensorsFile f(own_bytes(std::move(bytes)), name);
  f.parse_all();
  return f;
}

const SafeTensor* SafetensorsFile::find(std::string_view name) const {
  const auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

void SafetensorsFile::parse_all() {
  const Reader r(name_);
  const uint64_t size = bytes_->size();
  const uint8_t* p = bytes_->data();
  if (size < 8) r.fail("header length", "the file is " + std::to_string(size) + " bytes, shorter than the 8-byte header length");
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | p[i];
  if (n > size - 8)
    r.fail("header length", std::to_string(n) + " bytes, past the end of the file (" + std::to_string(size - 8) + " bytes after the length)");
  if (n > kMaxSafetensorsHeader)
    r.fail("header length", std::to_string(n) + " bytes, more than the limit of " + std::to_string(kMaxSafetensorsHeader));
  header_size_ = n;
  const std::string_view text(reinterpret_cast<const char*>(p + 8), n);
  if (text.empty() || text.front() != '{') r.fail("header", "does not start with '{' (not a JSON object)");
  const json h = parse_json_limited(text, kHeaderJson, {ErrorCode::kBadModel, name_ + ": header"});
  if (!h.is_object()) r.fail("header", std::string("expected a JSON object, got ") + json_kind(h));

  const uint64_t data_size = size - 8 - n;
  std::vector<SafeTensor> ts;
  for (const auto& [key, v] : h.items()) {
    if (key == "__metadata__") {
      if (!v.is_object()) r.fail("header.__metadata__", std::string("expected an object of strings, got ") + json_kind(v));
      for (const auto& [mk, mv] : v.items()) {
        if (!mv.is_string()) r.fail("header.__metadata__." + printable(mk, 40), std::string("expected a string, got ") + json_kind(mv));
        metadata_[mk] = mv.get<std::string>();
      }
      continue;
    }
    ts.push_back(r.tensor(key, v, data_size));
  }

  // H3: the tensors tile the data section, in offset order, without gap or overlap.
  std::sort(ts.begin(), ts.end(), [](const SafeTensor& a, const SafeTensor& b) {
    if (a.begin != b.begin) return a.begin < b.begin;
    return a.end != b.end ? a.end < b.end : a.name < b.name;
  });
  uint64_t at = 0;
  const SafeTensor* prev = nullptr;
  for (const SafeTensor& t : ts) {
    if (t.begin < at)
      r.fail("tensor " + quoted_name(t.name) + ".data_offsets",
             "[" + std::to_string(t.begin) + ", " + std::to_string(t.end) + ") overlaps tensor " + quoted_name(prev->name));
    if (t.begin > at)
      r.fail("tensor " + quoted_name(t.name) + ".data_offsets",
             "begins at " + std::to_string(t.begin) + ", leaving bytes [" + std::to_string(at) + ", " + std::to_string(t.begin) + ") unused");
    at = t.end;
    prev = &t;
  }
  if (at != data_size)
    r.fail("data section", std::to_string(data_size - at) + " bytes after the last tensor's end " + std::to_string(at) + " (tensors must cover it)");

  const uint8_t* data = p + 8 + n;
  for (size_t i = 0; i < ts.size(); ++i) {
    ts[i].data = data + ts[i].begin;
    index_.emplace(ts[i].name, i);
  }
  tensors_ = std::move(ts);
}

std::vector<float> safetensors_to_float(const SafeTensor& t, const std::string& file) {
  uint32_t type = 0;
  if (t.dtype == "F32") type = static_cast<uint32_t>(TensorType::kF32);
  else if (t.dtype == "F16") type = static_cast<uint32_t>(TensorType::kF16);
  else if (t.dtype == "BF16") type = static_cast<uint32_t>(TensorType::kBF16);
  else throw Error(ErrorCode::kBadModel, file + ": tensor " + quoted_name(t.name) + ".dtype: " + quoted_name(t.dtype) + " is not supported (F32, F16, BF16)");
  std::vector<float> out(t.n_elements);
  dequantize(type, {t.data, t.end - t.begin}, out, file + ": tensor " + quoted_name(t.name));
  return out;
}

}  // namespace akv::readers
