// Writes small GGUF v3 file images for the reader's tests (spec/gguf.md F2-F7): any metadata,
// tensors with their data, and hooks to break each field on purpose.
#pragma once
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

namespace akv::test {

/// Little-endian byte writer.
struct Writer {
  std::vector<uint8_t> b;
  template <class T>
  Writer& put(T v) {
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    b.insert(b.end(), p, p + sizeof(T));
    return *this;
  }
  Writer& str(const std::string& s) {
    put<uint64_t>(s.size());
    b.insert(b.end(), s.begin(), s.end());
    return *this;
  }
  Writer& raw(const std::vector<uint8_t>& r) {
    b.insert(b.end(), r.begin(), r.end());
    return *this;
  }
};

/// A metadata entry: key, value type id, the encoded value.
struct Kv {
  std::string key;
  uint32_t type;
  std::vector<uint8_t> value;
};

template <class T>
Kv kv(const std::string& key, uint32_t type, T v) {
  return {key, type, Writer{}.put(v).b};
}
inline Kv kv_str(const std::string& key, const std::string& s) { return {key, 8, Writer{}.str(s).b}; }
/// An array value: element type, count, the encoded elements.
inline std::vector<uint8_t> array_value(uint32_t elem_type, uint64_t count, const std::vector<uint8_t>& elems) {
  return Writer{}.put(elem_type).put(count).raw(elems).b;
}

struct TestTensor {
  TestTensor(std::string n, std::vector<uint64_t> d, uint32_t t, std::vector<uint8_t> bytes,
             std::optional<uint64_t> off = std::nullopt)
      : name(std::move(n)), dims(std::move(d)), type(t), data(std::move(bytes)), offset(off) {}
  std::string name;
  std::vector<uint64_t> dims;
  uint32_t type = 0;
  std::vector<uint8_t> data;
  std::optional<uint64_t> offset;  // default: packed in order, each aligned
};

/// The whole file image. Defaults give a valid file; each field can be overridden.
struct TestGguf {
  uint32_t magic = 0x46554747;
  uint32_t version = 3;
  std::optional<uint64_t> tensor_count, kv_count;  // default: the sizes of the vectors
  std::vector<Kv> kvs;
  std::vector<TestTensor> tensors;
  uint64_t alignment = 32;  // used to place data; add general.alignment yourself to change it

  std::vector<uint8_t> bytes() const {
    Writer o;
    o.put(magic).put(version).put<uint64_t>(tensor_count.value_or(tensors.size())).put<uint64_t>(kv_count.value_or(kvs.size()));
    for (const Kv& k : kvs) o.str(k.key).put(k.type).raw(k.value);
    std::vector<uint64_t> offsets;
    uint64_t next = 0;
    for (const TestTensor& t : tensors) {
      const uint64_t off = t.offset.value_or(next);
      offsets.push_back(off);
      next = (off + t.data.size() + alignment - 1) / alignment * alignment;
      o.str(t.name).put<uint32_t>(t.dims.size());
      for (uint64_t d : t.dims) o.put(d);
      o.put(t.type).put(off);
    }
    while (!tensors.empty() && o.b.size() % alignment) o.b.push_back(0);
    const size_t data_start = o.b.size();
    for (size_t i = 0; i < tensors.size(); ++i) {
      const size_t at = data_start + offsets[i];
      if (at > (size_t{1} << 26)) continue;  // a far offset (a hostile file): no data written
      if (o.b.size() < at + tensors[i].data.size()) o.b.resize(at + tensors[i].data.size(), 0);
      if (!tensors[i].data.empty()) std::memcpy(o.b.data() + at, tensors[i].data.data(), tensors[i].data.size());
    }
    return o.b;
  }
};

/// n float32 values v0, v0 + 1, ... as bytes.
inline std::vector<uint8_t> f32_bytes(size_t n, float v0 = 1.0f) {
  Writer o;
  for (size_t i = 0; i < n; ++i) o.put(v0 + static_cast<float>(i));
  return o.b;
}

}  // namespace akv::test
