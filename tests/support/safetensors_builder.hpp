// Writes small safetensors file images and Hugging Face model folders for the reader's tests
// (spec/safetensors.md H1-H7): a header built as JSON (which a test may edit before writing),
// the tensors' bytes packed in order, and raw assembly for headers no JSON writer would emit.
#pragma once
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include <unistd.h>

namespace akv::test {

/// 8-byte little-endian length `n` (default: the header's size), the header text, the data.
inline std::vector<uint8_t> safetensors_image(const std::string& header, const std::vector<uint8_t>& data,
                                              std::optional<uint64_t> n = std::nullopt) {
  std::vector<uint8_t> out(8);
  const uint64_t len = n.value_or(header.size());
  for (int i = 0; i < 8; ++i) out[i] = static_cast<uint8_t>(len >> (8 * i));
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

/// Tensors in order, their bytes packed one after another.
struct TestSafetensors {
  nlohmann::json header = nlohmann::json::object();
  std::vector<uint8_t> data;

  /// Appends a tensor: its header entry (dtype, shape, data_offsets) and its bytes.
  TestSafetensors& add(const std::string& name, const std::string& dtype, std::vector<uint64_t> shape, const std::vector<uint8_t>& bytes) {
    header[name] = {{"dtype", dtype}, {"shape", shape}, {"data_offsets", {data.size(), data.size() + bytes.size()}}};
    data.insert(data.end(), bytes.begin(), bytes.end());
    return *this;
  }
  /// The file image; `pad` spaces after the JSON (safetensors writers pad to 8 bytes).
  std::vector<uint8_t> bytes(size_t pad = 0) const { return safetensors_image(header.dump() + std::string(pad, ' '), data); }
};

/// Little-endian bytes of `v`.
template <class T>
std::vector<uint8_t> le_bytes(const std::vector<T>& v) {
  std::vector<uint8_t> out(v.size() * sizeof(T));
  if (!v.empty()) std::memcpy(out.data(), v.data(), out.size());
  return out;
}

/// A fresh, empty folder under the test temp dir, named `name`.
inline std::filesystem::path fresh_dir(const std::string& name) {
  const auto d = std::filesystem::temp_directory_path() / ("akv_test_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

inline void write_file(const std::filesystem::path& p, const std::vector<uint8_t>& bytes) {
  std::ofstream f(p, std::ios::binary);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}
inline void write_file(const std::filesystem::path& p, const std::string& text) {
  std::ofstream f(p, std::ios::binary);
  f << text;
}

}  // namespace akv::test
