#include "gate/environment.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>

#include "runtime/backends.hpp"
#include "runtime/build_info.hpp"

extern char** environ;

namespace akv::gate {

const std::vector<std::string>& library_env_prefixes() {
  static const std::vector<std::string> p{"BLIS_", "OPENBLAS_", "OMP_", "MKL_", "GOMP_", "KMP_", "DNNL_", "ONEDNN_", "GOTO_"};
  return p;
}

namespace {

// The "model name" line of /proc/cpuinfo and the flags akv's kernels care about.
nlohmann::json cpu() {
  std::string model = "unknown";
  std::vector<std::string> flags;
  std::ifstream f("/proc/cpuinfo");
  bool have_flags = false;
  for (std::string line; std::getline(f, line);) {
    const size_t c = line.find(':');
    if (c == std::string::npos) continue;
    const std::string value = c + 2 <= line.size() ? line.substr(c + 2) : "";
    if (line.rfind("model name", 0) == 0 && model == "unknown") model = value;
    if (line.rfind("flags", 0) == 0 && !have_flags) {
      have_flags = true;
      std::istringstream words(value);
      for (std::string w; words >> w;)
        if (w == "sse4_2" || w == "avx" || w == "avx2" || w == "fma" || w == "f16c" || w.rfind("avx512", 0) == 0) flags.push_back(w);
    }
  }
  std::vector<std::string> isas;
  for (const std::string& i : supported_isa_names()) isas.push_back(i);
  return {{"model", model}, {"flags", flags}, {"isas", isas}};
}

}  // namespace

nlohmann::json environment(const std::string& library) {
  std::map<std::string, std::string> vars;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string kv = *e;
    const size_t eq = kv.find('=');
    if (eq == std::string::npos) continue;
    for (const std::string& p : library_env_prefixes())
      if (kv.rfind(p, 0) == 0) vars[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return {{"akv", {{"version", akv_version()}, {"commit", akv_commit()}}},
          {"library", {{"path", library}, {"sha256", file_or_folder_sha256(library)}}},
          {"cpu", cpu()},
          {"env", vars}};
}

std::vector<std::string> env_assignments(const nlohmann::json& env) {
  std::vector<std::string> out;
  if (!env.is_object()) return out;
  for (const auto& [k, v] : env.items()) out.push_back(k + "=" + (v.is_string() ? v.get<std::string>() : v.dump()));
  std::sort(out.begin(), out.end());
  return out;
}

std::string shell_word(const std::string& w) {
  if (!w.empty() && w.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./,=:+") == std::string::npos)
    return w;
  std::string s = "'";
  for (char c : w) s += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return s + "'";
}

std::string env_prefix(const nlohmann::json& env) {
  std::string s;
  for (const std::string& a : env_assignments(env)) s += shell_word(a) + " ";
  return s;
}

std::string environment_line(const nlohmann::json& e) {
  std::string flags, vars;
  for (const auto& f : e["cpu"]["flags"]) flags += (flags.empty() ? "" : " ") + f.get<std::string>();
  for (const std::string& a : env_assignments(e["env"])) vars += (vars.empty() ? "" : " ") + a;
  return fmt::format("cpu: {} ({}); env: {}; library sha256 {}; akv {} ({})", e["cpu"]["model"].get<std::string>(),
                     flags.empty() ? "no AVX" : flags, vars.empty() ? "no library variables set" : vars,
                     e["library"]["sha256"].get<std::string>(), e["akv"]["version"].get<std::string>(),
                     e["akv"]["commit"].get<std::string>());
}

}  // namespace akv::gate
