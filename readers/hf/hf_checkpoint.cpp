#include "readers/hf/hf_checkpoint.hpp"

#include <filesystem>
#include <set>

#include "readers/json_limited.hpp"
#include "readers/mapped_file.hpp"
#include "reference/error.hpp"

namespace akv::readers {

using json = nlohmann::json;

namespace {

[[noreturn]] void bad(const std::string& file, const std::string& field, const std::string& what) {
  throw Error(ErrorCode::kBadModel, file + ": " + field + ": " + what);
}

// The index's weight_map: tensor name -> shard file name.
std::map<std::string, std::string> weight_map(const std::string& path) {
  constexpr JsonLimits kIndexJson{kMaxHfIndexBytes, 3, "spec/safetensors.md H5"};
  const auto bytes = map_file(path);
  const json j = parse_json_limited({reinterpret_cast<const char*>(bytes->data()), bytes->size()}, kIndexJson,
                                    {ErrorCode::kBadModel, path + ": index"});
  if (!j.is_object()) bad(path, "index", std::string("expected a JSON object, got ") + json_kind(j));
  const auto wm = j.find("weight_map");
  if (wm == j.end()) bad(path, "weight_map", "missing");
  if (!wm->is_object()) bad(path, "weight_map", std::string("expected an object, got ") + json_kind(*wm));
  std::map<std::string, std::string> out;
  for (const auto& [name, file] : wm->items()) {
    const std::string field = "weight_map." + quoted_name(name);
    if (!file.is_string()) bad(path, field, std::string("expected a shard file name, got ") + json_kind(file));
    const std::string f = file.get<std::string>();
    if (f.empty() || f == "." || f == ".." || f.find('/') != std::string::npos || f.find('\0') != std::string::npos)
      bad(path, field, "shard name " + quoted_name(f) + " is not a file name in the model folder");
    out.emplace(name, f);
  }
  return out;
}

}  // namespace

HfCheckpoint HfCheckpoint::open(const std::string& dir) {
  namespace fs = std::filesystem;
  HfCheckpoint c;
  const std::string single = dir + "/model.safetensors";
  const std::string index = dir + "/model.safetensors.index.json";
  std::error_code ec;
  if (fs::exists(single, ec)) {
    c.files_.push_back(SafetensorsFile::open(single));
    for (const SafeTensor& t : c.files_[0].tensors()) c.where_.emplace(t.name, 0);
    return c;
  }
  if (!fs::exists(index, ec))
    throw Error(ErrorCode::kBadModel, dir + ": no model.safetensors or model.safetensors.index.json in the model folder");

  const std::map<std::string, std::string> wm = weight_map(index);
  std::set<std::string> shards;
  for (const auto& [_, f] : wm) shards.insert(f);
  std::map<std::string, size_t> shard_index;
  for (const std::string& s : shards) {
    shard_index[s] = c.files_.size();
    c.files_.push_back(SafetensorsFile::open(dir + "/" + s));
  }
  for (const auto& [shard, i] : shard_index)
    for (const SafeTensor& t : c.files_[i].tensors()) {
      const auto it = wm.find(t.name);
      if (it == wm.end()) bad(index, "weight_map", "tensor " + quoted_name(t.name) + " of shard " + quoted_name(shard) + " is not listed");
      if (it->second != shard)
        bad(index, "weight_map." + quoted_name(t.name), "names shard " + quoted_name(it->second) + ", but the tensor is in " + quoted_name(shard));
      c.where_.emplace(t.name, i);
    }
  for (const auto& [name, shard] : wm)
    if (!c.where_.count(name)) bad(index, "weight_map." + quoted_name(name), "shard " + quoted_name(shard) + " has no such tensor");
  return c;
}

FoundTensor HfCheckpoint::find(std::string_view name) const {
  const auto it = where_.find(name);
  if (it == where_.end()) return {};
  return {files_[it->second].find(name), &files_[it->second]};
}

}  // namespace akv::readers
