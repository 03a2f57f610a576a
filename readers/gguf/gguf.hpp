// A GGUF v3 file: header, metadata, tensor infos, alignment and the mapped tensor data
// (spec/gguf.md F2-F7). Every offset, count and size is checked against the file before it is
// used; anything wrong is Error(kBadModel) naming the field. Strings and tensor data are views
// into the mapping, valid while the GgufFile lives.
#pragma once
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <variant>
#include <vector>

#include "readers/gguf/ggml_type.hpp"
#include "readers/mapped_file.hpp"

namespace akv::readers {

/// A metadata value's type, as stored in the file (gguf_type).
enum class ValueType : uint32_t {
  kU8 = 0, kI8 = 1, kU16 = 2, kI16 = 3, kU32 = 4, kI32 = 5, kF32 = 6, kBool = 7,
  kString = 8, kArray = 9, kU64 = 10, kI64 = 11, kF64 = 12,
};

/// "uint32", "string", ... for a type id; "type N" for an unknown one.
std::string value_type_name(uint32_t t);

/// A metadata array (F3). Scalars stay in the mapping, little-endian, `count` of them at `raw`;
/// strings and nested arrays are parsed into `strings` / `arrays`.
struct Array {
  ValueType type = ValueType::kU8;  // the element type
  uint64_t count = 0;
  const uint8_t* raw = nullptr;       // scalar elements (type not string/array), count * size bytes
  std::vector<std::string_view> strings;  // type == kString
  std::vector<Array> arrays;              // type == kArray

  /// Element i of a scalar array as T (T must be the element's C++ type: uint32_t for kU32,
  /// bool for kBool, ...). No check: the caller has checked `type` and i < count.
  template <class T>
  T at(uint64_t i) const {
    T v;
    std::memcpy(&v, raw + i * sizeof(T), sizeof(T));
    return v;
  }
};

/// A metadata value; the variant's index is its ValueType (F3).
using Value = std::variant<uint8_t, int8_t, uint16_t, int16_t, uint32_t, int32_t, float, bool,
                           std::string_view, Array, uint64_t, int64_t, double>;

inline ValueType value_type(const Value& v) { return static_cast<ValueType>(v.index()); }

/// One tensor info (F4), with its data located in the file (F6).
struct TensorInfo {
  std::string_view name;
  std::vector<uint64_t> dims;  // ggml order: dims[0] is the row length (contiguous), 1 to 4 dims
  uint32_t type = 0;           // TensorType id; type_layout(type) is never null here
  uint64_t offset = 0;         // bytes from the start of the data section, a multiple of alignment
  uint64_t n_elements = 0;     // product of dims, < 2^63
  uint64_t n_bytes = 0;        // n_elements / block * bytes per block
  const uint8_t* data = nullptr;  // n_bytes bytes inside the file
};

/// A parsed GGUF v3 file. Movable, not copyable; views stay valid across moves.
class GgufFile {
 public:
  /// Maps and parses the file at `path`. Throws Error(kBadModel) naming the field (F7).
  static GgufFile open(const std::string& path);
  /// Parses `bytes` (a whole file image); `name` is used in messages. Throws as open().
  static GgufFile parse(std::vector<uint8_t> bytes, const std::string& name = "<memory>");

  uint32_t version() const { return version_; }
  uint64_t file_size() const { return bytes_->size(); }
  uint64_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }  // start of the data section, in bytes
  const std::string& name() const { return name_; }
  /// The file's bytes, shared: every TensorInfo::data stays valid while a holder keeps them
  /// (a model's stored weights, spec/kernels-cpu.md K15).
  std::shared_ptr<const Bytes> bytes() const { return bytes_; }

  /// Metadata in file order.
  const std::vector<std::pair<std::string_view, Value>>& metadata() const { return kv_; }
  /// The value of `key`, or nullptr.
  const Value* find(std::string_view key) const;

  /// Typed getters (C1). Each throws Error(kBadModel) naming the key when it is missing or has
  /// another type. get_uint accepts any integer type holding a value >= 0; get_float accepts
  /// float32 and float64 (the latter rounded to the nearest float).
  uint64_t get_uint(std::string_view key) const;
  std::optional<uint64_t> find_uint(std::string_view key) const;
  float get_float(std::string_view key) const;
  std::optional<float> find_float(std::string_view key) const;
  std::string_view get_string(std::string_view key) const;
  std::optional<std::string_view> find_string(std::string_view key) const;
  const Array& get_array(std::string_view key) const;

  /// Tensor infos in file order.
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  /// The tensor named `name`, or nullptr.
  const TensorInfo* find_tensor(std::string_view name) const;

 private:
  GgufFile(std::unique_ptr<Bytes> bytes, std::string name);
  void parse_all();

  std::shared_ptr<const Bytes> bytes_;
  std::string name_;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  uint64_t data_offset_ = 0;
  std::vector<std::pair<std::string_view, Value>> kv_;
  std::unordered_map<std::string_view, size_t> kv_index_;
  std::vector<TensorInfo> tensors_;
  std::unordered_map<std::string_view, size_t> tensor_index_;
};

}  // namespace akv::readers
