#include "verify/props/counterexample.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "reference/error.hpp"

namespace akv::prop {

CounterexampleFile counterexample_file(const Counterexample& c, const std::string& property_id,
                                       const std::string& backend, const std::string& reproduce) {
  using nlohmann::json;
  CounterexampleFile f;
  json messages = json::array();
  std::vector<size_t> index_of(c.conv.spans.size(), SIZE_MAX);
  for (size_t i = 0; i < c.conv.spans.size(); ++i) {
    const gen::GenSpan& s = c.conv.spans[i];
    if (s.tokens.empty()) continue;
    index_of[i] = messages.size();
    messages.push_back({{"role", gen::role_name(s.role)}, {"tokens", s.tokens}});
  }
  for (size_t i : c.evict)
    if (i < index_of.size() && index_of[i] != SIZE_MAX) f.evict.push_back(index_of[i]);
  std::sort(f.evict.begin(), f.evict.end());
  f.evict.erase(std::unique(f.evict.begin(), f.evict.end()), f.evict.end());
  f.witness_applies = !f.evict.empty() && f.evict.size() < messages.size();
  std::string ev;
  for (size_t i : f.evict) ev += (ev.empty() ? "" : ",") + std::to_string(i);
  f.witness_args = (ev.empty() ? std::string() : "--evict " + ev + " ") + "--model " + c.model.config + " --seed " +
                   std::to_string(c.model.seed) + " --backend " + backend + " --logit-rows all";  // as the properties' appends
  if (c.model.kv != KvType::kF32) f.witness_args += std::string(" --kv-type ") + kv_type_name(c.model.kv);
  // The witness runs both builds with one set of options: the first backend's.
  if (!c.backends.empty() && c.backends[0].threads > 0) f.witness_args += " --threads " + std::to_string(c.backends[0].threads);
  if (!c.backends.empty() && !c.backends[0].isa.empty()) f.witness_args += " --isa " + c.backends[0].isa;
  json backends = json::array();
  for (const gen::BackendDraw& d : c.backends) {
    json b = {{"scratch", gen::scratch_kind_name(d.scratch)}};
    if (d.threads > 0) b["threads"] = d.threads;
    if (!d.isa.empty()) b["isa"] = d.isa;
    if (d.scratch == gen::ScratchKind::kStale) b["warmup_tokens"] = d.warmup;
    backends.push_back(b);
  }
  json meta = {{"property", property_id}, {"backend", backend},          {"model", c.model.config},
               {"seed", c.model.seed},    {"reproduce", reproduce},      {"note", c.note},
               {"span_indexes_evicted", c.evict}, {"witness_applies", f.witness_applies}, {"witness_args", f.witness_args},
               {"backends", backends},          {"kv_type", kv_type_name(c.model.kv)}};
  f.json = json{{"messages", messages}, {"poisoned", f.evict}, {"akv_counterexample", meta}}.dump(1);
  return f;
}

std::string write_counterexample(const std::string& dir, const std::string& name, const CounterexampleFile& f) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  const std::string path = (std::filesystem::path(dir) / name).string();
  std::ofstream out(path, std::ios::binary);
  if (!out || !(out << f.json << "\n")) throw Error(ErrorCode::kBadInput, "cannot write counterexample file '" + path + "'");
  return path;
}

}  // namespace akv::prop
