// The safetensors files of a Hugging Face model folder: `model.safetensors`, or the shards a
// `model.safetensors.index.json` names (spec/safetensors.md H4).
#pragma once
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "readers/hf/safetensors.hpp"

namespace akv::readers {

/// The largest shard index akv reads, in bytes.
inline constexpr uint64_t kMaxHfIndexBytes = uint64_t{64} << 20;

/// A tensor and the file that holds it.
struct FoundTensor {
  const SafeTensor* tensor = nullptr;
  const SafetensorsFile* file = nullptr;
};

/// Every tensor of a model folder, each in exactly one file. Movable, not copyable.
class HfCheckpoint {
 public:
  /// Opens `dir`/model.safetensors when it exists; otherwise `dir`/model.safetensors.index.json
  /// (its "weight_map": tensor name -> shard file name in `dir`) and every shard it names.
  /// Throws Error(kBadModel) naming the file and field: neither file present, an index that is
  /// not a JSON object with a weight_map of strings, a shard name with a '/' (or "." / ".."),
  /// a tensor the index places in one shard but found in another or in none, a tensor of a
  /// shard the index does not list, or anything SafetensorsFile::open rejects (H1-H3).
  static HfCheckpoint open(const std::string& dir);

  /// The tensor `name`, or {nullptr, nullptr}.
  FoundTensor find(std::string_view name) const;
  /// The files, in the order opened (one, or the shards by name).
  const std::vector<SafetensorsFile>& files() const { return files_; }

 private:
  std::vector<SafetensorsFile> files_;
  std::map<std::string, size_t, std::less<>> where_;  // tensor name -> index in files_
};

}  // namespace akv::readers
