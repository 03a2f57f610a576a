#include "campaign/result.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>

#include "runtime/backends.hpp"
#include "readers/json_limited.hpp"
#include "reference/error.hpp"
#include "runtime/build_info.hpp"

namespace akv::campaign {

namespace fs = std::filesystem;
using nlohmann::json;

bool ShardResult::passed() const {
  if (properties.size() != campaign.properties.size()) return false;
  for (size_t i = 0; i < properties.size(); ++i) {
    const PropertyResult& p = properties[i];
    if (p.id != campaign.properties[i] || p.status != "passed" || p.failed != 0 || p.passed != cases) return false;
  }
  return true;
}

json to_json(const ShardResult& r) {
  json props = json::array();
  for (const PropertyResult& p : r.properties) {
    json o = {{"id", p.id},           {"status", p.status},         {"cases_run", p.cases_run},
              {"passed", p.passed},   {"failed", p.failed},         {"wall_seconds", p.wall_seconds},
              {"cpu_seconds", p.cpu_seconds}};
    // Present only when there is one: never a null or an empty string standing in for it.
    if (!p.reproduce.empty()) o["reproduce"] = p.reproduce;
    if (!p.counterexample.empty()) o["counterexample"] = p.counterexample;
    if (!p.witness_args.empty()) o["witness_args"] = p.witness_args;
    if (!p.message.empty()) o["message"] = p.message;
    props.push_back(std::move(o));
  }
  const CampaignId& c = r.campaign;
  return {{"akv_campaign_shard", kShardFormat},
          {"campaign",
           {{"seed", c.seed}, {"cases", c.cases}, {"shards", c.shards}, {"backend", c.backend}, {"profile", c.profile},
            {"properties", c.properties},
            {"rapidcheck", {{"max_size", c.max_size}, {"max_discard_ratio", c.max_discard_ratio}, {"disable_shrinking", c.disable_shrinking}}},
            {"isas_drawn", c.isas_drawn}}},
          {"akv", {{"version", c.akv_version}, {"commit", c.akv_commit}}},
          {"shard", {{"index", r.shard.index}, {"total", r.shard.total}, {"source", r.shard.source}, {"seed", r.seed}, {"cases", r.cases}}},
          {"machine", {{"hostname", r.hostname}, {"cpu", r.cpu}, {"isa", r.isa}, {"isas", r.isas}, {"cores", r.cores}}},
          {"started", r.started},
          {"finished", r.finished},
          {"wall_seconds", r.wall_seconds},
          {"cpu_seconds", r.cpu_seconds},
          {"passed", r.passed()},
          {"properties", std::move(props)}};
}

namespace {

// Strict field access: every read names the file and the field it wanted.
struct Reader {
  std::string file;

  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw Error(ErrorCode::kBadInput, fmt::format("{}: {}: {}", file, field, what));
  }
  static std::string join(const std::string& field, const char* key) { return field.empty() ? key : field + "." + key; }
  const json& at(const json& o, const std::string& field, const char* key) const {
    if (!o.is_object()) fail(field.empty() ? "the file" : field, "not an object");
    const auto it = o.find(key);
    if (it == o.end()) fail(join(field, key), "missing");
    return *it;
  }
  // No key but `keys`: a key this reader does not know is a file it cannot vouch for.
  void only(const json& o, const std::string& field, std::initializer_list<const char*> keys) const {
    if (!o.is_object()) fail(field.empty() ? "the file" : field, "not an object");
    for (const auto& [k, v] : o.items()) {
      bool known = false;
      for (const char* x : keys) known = known || k == x;
      if (!known) fail(field.empty() ? k : field + "." + k, "not a field of a shard file");
    }
  }
  std::string str(const json& o, const std::string& field, const char* key, bool required = true) const {
    if (!required && (!o.is_object() || !o.contains(key))) return {};
    const json& v = at(o, field, key);
    if (!v.is_string()) fail(join(field, key), fmt::format("{}, not a string", readers::json_kind(v)));
    return v.get<std::string>();
  }
  uint64_t uint(const json& o, const std::string& field, const char* key, uint64_t lo, uint64_t hi) const {
    const json& v = at(o, field, key);
    if (!v.is_number_unsigned()) fail(join(field, key), fmt::format("{}, not a non-negative integer", readers::json_kind(v)));
    const uint64_t x = v.get<uint64_t>();
    if (x < lo || x > hi) fail(join(field, key), fmt::format("{} is out of range [{}, {}]", x, lo, hi));
    return x;
  }
  double seconds(const json& o, const std::string& field, const char* key) const {
    const json& v = at(o, field, key);
    if (!v.is_number()) fail(join(field, key), fmt::format("{}, not a number", readers::json_kind(v)));
    const double x = v.get<double>();
    // At most ~31,700 years: sums over 10^5 shards stay finite.
    if (!std::isfinite(x) || x < 0 || x > 1e12) fail(join(field, key), "not a number of seconds in [0, 1e12]");
    return x;
  }
  bool boolean(const json& o, const std::string& field, const char* key) const {
    const json& v = at(o, field, key);
    if (!v.is_boolean()) fail(join(field, key), fmt::format("{}, not a boolean", readers::json_kind(v)));
    return v.get<bool>();
  }
  std::string utc(const json& o, const std::string& field, const char* key) const {
    static const std::regex iso(R"([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z)");
    const std::string s = str(o, field, key);
    if (!std::regex_match(s, iso)) fail(join(field, key), "not a UTC time YYYY-MM-DDTHH:MM:SSZ");
    return s;
  }
  std::vector<std::string> strings(const json& o, const std::string& field, const char* key) const {
    const json& v = at(o, field, key);
    if (!v.is_array()) fail(join(field, key), fmt::format("{}, not an array", readers::json_kind(v)));
    std::vector<std::string> out;
    for (const json& e : v) {
      if (!e.is_string()) fail(join(field, key), fmt::format("an element is {}, not a string", readers::json_kind(e)));
      out.push_back(e.get<std::string>());
    }
    return out;
  }
};

constexpr uint64_t kMaxCases = 1000000000;

}  // namespace

ShardResult read_shard_file(const std::string& path) {
  constexpr readers::JsonLimits kShardJson{size_t{64} << 20, 8, "spec/input.md IN3"};
  const json j = readers::read_json_file(path, kShardJson, {ErrorCode::kBadInput, path + ": shard file"});
  const Reader rd{path};
  if (!j.is_object() || !j.contains("akv_campaign_shard")) rd.fail("akv_campaign_shard", "missing: not a shard file of akv campaign");
  rd.only(j, "", {"akv_campaign_shard", "campaign", "akv", "shard", "machine", "started", "finished", "wall_seconds", "cpu_seconds",
                  "passed", "properties"});
  if (rd.uint(j, "", "akv_campaign_shard", 0, UINT64_MAX) != kShardFormat)
    rd.fail("akv_campaign_shard", fmt::format("format {} is not the {} this akv reads", j["akv_campaign_shard"].dump(), kShardFormat));
  ShardResult r;
  const json& c = rd.at(j, "", "campaign");
  rd.only(c, "campaign", {"seed", "cases", "shards", "backend", "profile", "properties", "rapidcheck", "isas_drawn"});
  r.campaign.seed = rd.uint(c, "campaign", "seed", 0, UINT64_MAX);
  r.campaign.cases = static_cast<int>(rd.uint(c, "campaign", "cases", 1, kMaxCases));
  r.campaign.shards = static_cast<int>(rd.uint(c, "campaign", "shards", 1, kMaxShards));
  r.campaign.backend = rd.str(c, "campaign", "backend");
  r.campaign.profile = rd.str(c, "campaign", "profile");
  r.campaign.properties = rd.strings(c, "campaign", "properties");
  if (r.campaign.properties.empty()) rd.fail("campaign.properties", "empty: the campaign ran no property");
  const json& rcp = rd.at(c, "campaign", "rapidcheck");
  rd.only(rcp, "campaign.rapidcheck", {"max_size", "max_discard_ratio", "disable_shrinking"});
  r.campaign.max_size = static_cast<int>(rd.uint(rcp, "campaign.rapidcheck", "max_size", 0, INT32_MAX));
  r.campaign.max_discard_ratio = static_cast<int>(rd.uint(rcp, "campaign.rapidcheck", "max_discard_ratio", 0, INT32_MAX));
  r.campaign.disable_shrinking = rd.boolean(rcp, "campaign.rapidcheck", "disable_shrinking");
  r.campaign.isas_drawn = rd.strings(c, "campaign", "isas_drawn");
  const json& a = rd.at(j, "", "akv");
  rd.only(a, "akv", {"version", "commit"});
  r.campaign.akv_version = rd.str(a, "akv", "version");
  r.campaign.akv_commit = rd.str(a, "akv", "commit");
  const json& s = rd.at(j, "", "shard");
  rd.only(s, "shard", {"index", "total", "source", "seed", "cases"});
  r.shard.total = static_cast<int>(rd.uint(s, "shard", "total", 1, kMaxShards));
  r.shard.index = static_cast<int>(rd.uint(s, "shard", "index", 0, static_cast<uint64_t>(r.shard.total) - 1));
  if (r.shard.total != r.campaign.shards)
    rd.fail("shard.total", fmt::format("{} is not the campaign's {} shards", r.shard.total, r.campaign.shards));
  r.shard.source = rd.str(s, "shard", "source");
  r.seed = rd.uint(s, "shard", "seed", 0, UINT64_MAX);
  r.cases = static_cast<int>(rd.uint(s, "shard", "cases", 1, kMaxCases));
  // What the shard ran is fixed by the campaign (CP2); a file that says otherwise was not
  // written by this rule.
  if (r.seed != shard_seed(r.campaign.seed, r.shard))
    rd.fail("shard.seed", fmt::format("{} is not the seed shard {} of seed {} runs", r.seed, r.shard.index, r.campaign.seed));
  if (r.campaign.cases < r.shard.total || r.cases != shard_cases(r.campaign.cases, r.shard))
    rd.fail("shard.cases", fmt::format("{} is not shard {}/{}'s share of {} cases", r.cases, r.shard.index, r.shard.total, r.campaign.cases));
  if (r.shard.total > 1 && r.campaign.cases / r.shard.total < min_shard_cases(r.campaign.max_size))
    rd.fail("shard.cases", fmt::format("{} cases per shard cover fewer than RapidCheck's {} sizes", r.campaign.cases / r.shard.total,
                                       min_shard_cases(r.campaign.max_size)));
  const json& m = rd.at(j, "", "machine");
  rd.only(m, "machine", {"hostname", "cpu", "isa", "isas", "cores"});
  r.hostname = rd.str(m, "machine", "hostname");
  r.cpu = rd.str(m, "machine", "cpu");
  r.isa = rd.str(m, "machine", "isa");
  r.isas = rd.strings(m, "machine", "isas");
  r.cores = static_cast<int>(rd.uint(m, "machine", "cores", 0, 1u << 20));
  r.started = rd.utc(j, "", "started");
  r.finished = rd.utc(j, "", "finished");
  r.wall_seconds = rd.seconds(j, "", "wall_seconds");
  r.cpu_seconds = rd.seconds(j, "", "cpu_seconds");
  const bool said_passed = rd.boolean(j, "", "passed");
  const json& ps = rd.at(j, "", "properties");
  if (!ps.is_array()) rd.fail("properties", fmt::format("{}, not an array", readers::json_kind(ps)));
  if (ps.size() != r.campaign.properties.size())
    rd.fail("properties", fmt::format("{} entries for the campaign's {} properties", ps.size(), r.campaign.properties.size()));
  for (size_t i = 0; i < ps.size(); ++i) {
    const std::string f = fmt::format("properties[{}]", i);
    const json& o = ps[i];
    rd.only(o, f, {"id", "status", "cases_run", "passed", "failed", "wall_seconds", "cpu_seconds", "reproduce", "counterexample",
                   "witness_args", "message"});
    PropertyResult p;
    p.id = rd.str(o, f, "id");
    if (p.id != r.campaign.properties[i]) rd.fail(f + ".id", fmt::format("'{}' is not the campaign's property {}", p.id, i));
    p.status = rd.str(o, f, "status");
    if (p.status != "passed" && p.status != "failed" && p.status != "gave_up")
      rd.fail(f + ".status", fmt::format("'{}' is not passed, failed or gave_up", p.status));
    p.cases_run = static_cast<int>(rd.uint(o, f, "cases_run", 0, kMaxCases));
    p.passed = static_cast<int>(rd.uint(o, f, "passed", 0, kMaxCases));
    p.failed = static_cast<int>(rd.uint(o, f, "failed", 0, 1));
    if (p.passed + p.failed != p.cases_run) rd.fail(f, "passed + failed is not cases_run");
    if (p.passed > r.cases) rd.fail(f + ".passed", fmt::format("{} is more than the shard's {} cases", p.passed, r.cases));
    if ((p.status == "failed") != (p.failed == 1)) rd.fail(f + ".failed", "does not match the status");
    p.wall_seconds = rd.seconds(o, f, "wall_seconds");
    p.cpu_seconds = rd.seconds(o, f, "cpu_seconds");
    // Optional strings are absent when there is none, never empty (CP3).
    for (const char* k : {"reproduce", "counterexample", "witness_args", "message"})
      if (o.contains(k) && rd.str(o, f, k).empty()) rd.fail(f + "." + k, "empty: absent when there is none");
    p.reproduce = rd.str(o, f, "reproduce", false);
    p.counterexample = rd.str(o, f, "counterexample", false);
    if (o.contains("counterexample") && (fs::path(p.counterexample).filename() != p.counterexample || p.counterexample == "." ||
                                         p.counterexample == ".."))
      rd.fail(f + ".counterexample", "not the name of a file beside the shard file");
    p.witness_args = rd.str(o, f, "witness_args", false);
    p.message = rd.str(o, f, "message", false);
    r.properties.push_back(std::move(p));
  }
  if (said_passed != r.passed()) rd.fail("passed", fmt::format("says {} but its properties say {}", said_passed, r.passed()));
  return r;
}

namespace {
// A temporary name no other writer shares, on this host or another on a shared file system.
std::string temp_beside(const std::string& path) {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0) host[0] = 0;
  std::string h;
  for (const char* c = host; *c; ++c) h += std::isalnum(static_cast<unsigned char>(*c)) ? *c : '_';
  return path + ".tmp." + h + "." + std::to_string(::getpid());
}
}  // namespace

void check_writable(const std::string& dir, const Shard& s) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (!fs::is_directory(dir, ec)) throw Error(ErrorCode::kBadInput, fmt::format("--out {}: not a folder, and cannot be made one", dir));
  const std::string path = (fs::path(dir) / shard_file_name(s)).string();
  if (fs::exists(fs::symlink_status(path, ec)) && !fs::is_regular_file(path, ec))
    throw Error(ErrorCode::kBadInput, fmt::format("--out {}: {} is there and is not a file", dir, path));
  const std::string probe = temp_beside(path);
  {
    std::ofstream f(probe, std::ios::binary | std::ios::trunc);
    if (!f) throw Error(ErrorCode::kBadInput, fmt::format("--out {}: cannot create a file there", dir));
  }
  fs::remove(probe, ec);
}

std::string write_shard_file(const std::string& dir, const ShardResult& r) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  const std::string path = (fs::path(dir) / shard_file_name(r.shard)).string();
  const std::string tmp = temp_beside(path);
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f << to_json(r).dump(2, ' ', false, json::error_handler_t::replace) << "\n";
    f.flush();
    if (!f) throw Error(ErrorCode::kBadInput, fmt::format("--out {}: cannot write {}", dir, tmp));
  }
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw Error(ErrorCode::kBadInput, fmt::format("--out {}: cannot write {}", dir, path));
  }
  return path;
}

void fill_machine(ShardResult& r) {
  char host[256] = {};
  r.hostname = ::gethostname(host, sizeof host - 1) == 0 ? host : "unknown";
  r.cpu = cpu_model();
  r.isas = supported_isa_names();
  r.isa = auto_isa_name();
  const long n = ::sysconf(_SC_NPROCESSORS_ONLN);
  r.cores = n > 0 ? static_cast<int>(n) : 0;
}

}  // namespace akv::campaign
