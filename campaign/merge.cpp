#include "campaign/merge.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <regex>

#include "reference/error.hpp"

namespace akv::campaign {

namespace fs = std::filesystem;
using nlohmann::json;

bool MergeReport::passed() const {
  if (!problems.empty() || !failures.empty() || properties.empty()) return false;
  for (const MergedProperty& p : properties)
    if (p.failed != 0 || p.gave_up != 0 || p.passed != campaign.cases) return false;
  return true;
}

namespace {

// The shard files of `inputs`: a folder's shard-I-of-N.json files (not its subfolders), a
// file as itself.
const std::regex& shard_name() {
  static const std::regex name(R"(shard-([0-9]+)-of-([0-9]+)\.json)");
  return name;
}

std::vector<std::string> shard_files(const std::vector<std::string>& inputs) {
  std::vector<std::string> out;
  for (const std::string& in : inputs) {
    std::error_code ec;
    const fs::file_status st = fs::status(in, ec);
    if (fs::is_directory(st)) {
      std::vector<std::string> here;
      fs::directory_iterator it(in, ec), end;
      for (; !ec && it != end; it.increment(ec)) {
        if (!std::regex_match(it->path().filename().string(), shard_name())) continue;
        std::error_code fe;
        // A folder, FIFO, dangling or looping link under a shard file's name is not skipped:
        // it may be the very shard that is missing.
        if (!fs::is_regular_file(it->path(), fe))
          throw Error(ErrorCode::kBadInput, fmt::format("{}: not a regular file{}", it->path().string(), fe ? " (" + fe.message() + ")" : ""));
        here.push_back(it->path().string());
      }
      if (ec) throw Error(ErrorCode::kBadInput, fmt::format("{}: cannot be listed: {}", in, ec.message()));
      std::sort(here.begin(), here.end());
      out.insert(out.end(), here.begin(), here.end());
    } else if (fs::is_regular_file(st)) {
      out.push_back(in);
    } else if (ec || !fs::exists(st)) {
      throw Error(ErrorCode::kBadInput, fmt::format("{}: no such folder or file{}", in, ec ? " (" + ec.message() + ")" : ""));
    } else {
      throw Error(ErrorCode::kBadInput, fmt::format("{}: neither a folder nor a regular file", in));
    }
  }
  return out;
}

// A file named shard-I-of-N.json must hold shard I of N: a renamed file is not that shard.
void check_name(const std::string& file, const ShardResult& s) {
  std::smatch m;
  const std::string base = fs::path(file).filename().string();
  if (!std::regex_match(base, m, shard_name())) return;
  const auto num = [](const std::string& d) {
    const size_t nz = d.find_first_not_of('0');
    return nz == std::string::npos ? std::string("0") : d.substr(nz);
  };
  if (num(m[1].str()) != std::to_string(s.shard.index) || num(m[2].str()) != std::to_string(s.shard.total))
    throw Error(ErrorCode::kBadInput, fmt::format("{}: holds shard {} of {}, not the shard its name says", file, s.shard.index, s.shard.total));
}

// The first field in which two shards' campaigns differ, or "".
std::string differs(const CampaignId& a, const CampaignId& b) {
  if (a.seed != b.seed) return fmt::format("seed {} vs {}", a.seed, b.seed);
  if (a.cases != b.cases) return fmt::format("cases {} vs {}", a.cases, b.cases);
  if (a.shards != b.shards) return fmt::format("shards {} vs {}", a.shards, b.shards);
  if (a.backend != b.backend) return fmt::format("backend {} vs {}", a.backend, b.backend);
  if (a.profile != b.profile) return fmt::format("profile {} vs {}", a.profile, b.profile);
  if (a.properties != b.properties) return "the list of properties";
  if (a.isas_drawn != b.isas_drawn) return "the ISAs the cpu backend's cases draw from (machines with other ISAs)";
  if (a.max_size != b.max_size || a.max_discard_ratio != b.max_discard_ratio || a.disable_shrinking != b.disable_shrinking)
    return fmt::format("RapidCheck max_size {} vs {}, max_discard_ratio {} vs {}, disable_shrinking {} vs {} (RC_PARAMS)", a.max_size,
                       b.max_size, a.max_discard_ratio, b.max_discard_ratio, a.disable_shrinking, b.disable_shrinking);
  if (a.akv_version != b.akv_version || a.akv_commit != b.akv_commit)
    return fmt::format("akv {} (commit {}) vs {} (commit {})", a.akv_version, a.akv_commit, b.akv_version, b.akv_commit);
  return {};
}

}  // namespace

MergeReport merge_shards(const std::vector<std::string>& inputs) {
  MergeReport m;
  const std::vector<std::string> files = shard_files(inputs);
  if (files.empty()) {
    std::string where;
    for (const std::string& in : inputs) where += (where.empty() ? "" : ", ") + in;
    m.problems.push_back(fmt::format("no shard file (shard-I-of-N.json) in {}: the campaign checked nothing", where));
    return m;
  }
  std::vector<ShardResult> shards;
  for (const std::string& f : files) {
    shards.push_back(read_shard_file(f));
    check_name(f, shards.back());
    if (const std::string d = differs(shards.front().campaign, shards.back().campaign); !d.empty())
      throw Error(ErrorCode::kBadInput,
                  fmt::format("{} and {} are shards of different campaigns ({}): merge one campaign at a time", files.front(), f, d));
  }
  m.campaign = shards.front().campaign;

  // Each index exactly once (CP4).
  std::map<int, std::vector<size_t>> by_index;
  for (size_t i = 0; i < shards.size(); ++i) by_index[shards[i].shard.index].push_back(i);
  std::vector<int> missing;
  for (int i = 0; i < m.campaign.shards; ++i)
    if (!by_index.count(i)) missing.push_back(i);
  if (!missing.empty()) {
    std::string list;
    for (size_t k = 0; k < missing.size() && k < 20; ++k) list += (k ? ", " : "") + std::to_string(missing[k]);
    if (missing.size() > 20) list += fmt::format(", ... ({} in all)", missing.size());
    m.problems.push_back(fmt::format("missing shard{} {} of {}: no result file (the shard did not run, or did not finish)",
                                     missing.size() > 1 ? "s" : "", list, m.campaign.shards));
  }
  for (const auto& [index, at] : by_index) {
    if (at.size() < 2) continue;
    std::string list;
    for (size_t k : at) list += (list.empty() ? "" : ", ") + files[k];
    m.problems.push_back(fmt::format("shard {} was read {} times ({}): each shard counts once", index, at.size(), list));
  }

  for (const std::string& id : m.campaign.properties) m.properties.push_back(MergedProperty{id});
  std::map<std::tuple<std::string, std::string, std::string, int>, size_t> machine_at;
  for (const auto& [index, at] : by_index) {
    const size_t k = at.front();  // a duplicate is a problem already; count its first file once
    const ShardResult& s = shards[k];
    m.files.push_back(files[k]);
    m.wall_seconds += s.wall_seconds;
    m.cpu_seconds += s.cpu_seconds;
    const auto key = std::make_tuple(s.hostname, s.cpu, s.isa, s.cores);
    if (!machine_at.count(key)) {
      machine_at[key] = m.machines.size();
      m.machines.push_back({s.hostname, s.cpu, s.isa, s.cores, 0});
    }
    ++m.machines[machine_at[key]].shards;
    std::vector<std::string> ids;
    for (const PropertyResult& p : s.properties) ids.push_back(p.id);
    if (ids != m.campaign.properties) {
      m.problems.push_back(fmt::format("{}: its properties are not the campaign's list (the shard stopped early?)", files[k]));
      continue;
    }
    for (size_t i = 0; i < s.properties.size(); ++i) {
      const PropertyResult& p = s.properties[i];
      MergedProperty& mp = m.properties[i];
      mp.cases_run += p.cases_run;
      mp.passed += p.passed;
      mp.failed += p.failed;
      mp.gave_up += p.status == "gave_up";
      mp.wall_seconds += p.wall_seconds;
      mp.cpu_seconds += p.cpu_seconds;
      if (p.status == "passed" && p.passed != s.cases)
        m.problems.push_back(fmt::format("{}: {} passed {} of the shard's {} cases", files[k], p.id, p.passed, s.cases));
      if (p.status == "passed") continue;
      MergedFailure f{p.id, p.status, s.shard.index, files[k], p.reproduce, "", ""};
      if (!p.counterexample.empty()) {
        f.counterexample = (fs::path(files[k]).parent_path() / p.counterexample).string();
        if (!p.witness_args.empty()) f.rerun = "akv witness " + f.counterexample + " " + p.witness_args;
      }
      m.failures.push_back(std::move(f));
    }
  }
  int64_t total = 0;
  for (const MergedProperty& p : m.properties) total += p.cases_run;
  if (total == 0) m.problems.push_back("zero cases run: the campaign checked nothing");
  return m;
}

json to_json(const MergeReport& m) {
  if (m.files.empty()) return {{"shards", json::array()}, {"problems", m.problems}, {"passed", false}};  // no campaign to name
  json props = json::array(), fails = json::array(), machines = json::array();
  for (const MergedProperty& p : m.properties)
    props.push_back({{"id", p.id},
                     {"cases_run", p.cases_run},
                     {"passed", p.passed},
                     {"failed", p.failed},
                     {"gave_up_shards", p.gave_up},
                     {"wall_seconds", p.wall_seconds},
                     {"cpu_seconds", p.cpu_seconds},
                     {"ok", p.failed == 0 && p.gave_up == 0 && p.passed == m.campaign.cases}});
  for (const MergedFailure& f : m.failures) {
    json o = {{"property", f.property}, {"status", f.status}, {"shard", f.shard}, {"file", f.file}};
    if (!f.reproduce.empty()) o["reproduce"] = f.reproduce;
    if (!f.counterexample.empty()) o["counterexample"] = f.counterexample;
    if (!f.rerun.empty()) o["rerun"] = f.rerun;
    fails.push_back(std::move(o));
  }
  for (const MergedMachine& x : m.machines)
    machines.push_back({{"hostname", x.hostname}, {"cpu", x.cpu}, {"isa", x.isa}, {"cores", x.cores}, {"shards", x.shards}});
  const CampaignId& c = m.campaign;
  return {{"campaign",
           {{"seed", c.seed}, {"cases", c.cases}, {"shards", c.shards}, {"backend", c.backend}, {"profile", c.profile},
            {"properties", c.properties}, {"akv", {{"version", c.akv_version}, {"commit", c.akv_commit}}},
            {"rapidcheck", {{"max_size", c.max_size}, {"max_discard_ratio", c.max_discard_ratio}, {"disable_shrinking", c.disable_shrinking}}},
            {"isas_drawn", c.isas_drawn}}},
          {"shards", m.files},
          {"properties", std::move(props)},
          {"failures", std::move(fails)},
          {"machines", std::move(machines)},
          {"problems", m.problems},
          {"wall_seconds", m.wall_seconds},
          {"cpu_seconds", m.cpu_seconds},
          {"passed", m.passed()}};
}

}  // namespace akv::campaign
