// A safetensors file: an 8-byte little-endian header length, a JSON header (tensor name ->
// dtype, shape, data_offsets; optional "__metadata__"), then the tensor bytes
// (spec/safetensors.md H1-H4). Every length, offset, shape product and range is checked,
// overflow-safe, before it is used; anything wrong is Error(kBadModel) naming the file and the
// field, on one line. Tensor data are views into the mapping, valid while the file object lives.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "readers/mapped_file.hpp"

namespace akv::readers {

/// The largest header akv reads (H1): 100 MiB, the limit of the reference implementation.
inline constexpr uint64_t kMaxSafetensorsHeader = uint64_t{100} << 20;
/// The most dimensions a tensor may have (H2).
inline constexpr size_t kMaxSafetensorsRank = 8;

/// One tensor of the header (H2), located in the file (H3).
struct SafeTensor {
  std::string name;
  std::string dtype;            // as in the header: "F32", "F16", "BF16", "I8", ...
  uint32_t elem_bytes = 0;      // bytes per element of dtype (1, 2, 4 or 8)
  std::vector<uint64_t> shape;  // row-major, outermost first (torch order); may be empty (a scalar)
  uint64_t n_elements = 0;      // product of shape (1 for a scalar), n_elements * elem_bytes < 2^63
  uint64_t begin = 0, end = 0;  // data_offsets: bytes from the start of the data section
  const uint8_t* data = nullptr;  // end - begin bytes inside the file; not aligned
};

/// A parsed safetensors file. Movable, not copyable; views stay valid across moves.
class SafetensorsFile {
 public:
  /// Maps and parses the file at `path`. Throws Error(kBadModel) `PATH: FIELD: problem` (H1-H3).
  static SafetensorsFile open(const std::string& path);
  /// Parses `bytes` (a whole file image); `name` is used in messages. Throws as open().
  static SafetensorsFile parse(std::vector<uint8_t> bytes, const std::string& name = "<memory>");

  const std::string& name() const { return name_; }
  uint64_t file_size() const { return bytes_->size(); }
  uint64_t header_size() const { return header_size_; }  // N, the JSON header's bytes
  uint64_t data_offset() const { return 8 + header_size_; }

  /// The "__metadata__" strings (empty when absent).
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  /// The tensors in data order (ascending data_offsets; they tile the data section, H3).
  const std::vector<SafeTensor>& tensors() const { return tensors_; }
  /// The tensor named `name`, or nullptr.
  const SafeTensor* find(std::string_view name) const;

 private:
  SafetensorsFile(std::unique_ptr<Bytes> bytes, std::string name);
  void parse_all();

  std::unique_ptr<Bytes> bytes_;
  std::string name_;
  uint64_t header_size_ = 0;
  std::map<std::string, std::string> metadata_;
  std::vector<SafeTensor> tensors_;
  std::map<std::string, size_t, std::less<>> index_;
};

/// Bytes per element of a safetensors dtype name, or 0 for a name akv does not know. Known:
/// BOOL, U8, I8, F8_E5M2, F8_E4M3 (1); U16, I16, F16, BF16 (2); U32, I32, F32 (4); U64, I64, F64 (8).
uint32_t safetensors_dtype_bytes(std::string_view dtype);

/// Tensor `t` of the file named `file` as float32, n_elements values in row-major order (H4):
/// F32 bit for bit, F16 and BF16 by spec/gguf.md Q1. Another dtype is Error(kBadModel)
/// `FILE: tensor 'NAME'.dtype: ... not supported`.
std::vector<float> safetensors_to_float(const SafeTensor& t, const std::string& file);

}  // namespace akv::readers
