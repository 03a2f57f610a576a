// Runs the `akv` binary as a user would, keeping stdout and stderr apart: the exit code, the
// signal if one killed it, and both streams (spec/input.md IN5, IN6).
#pragma once
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

namespace akv::test {

struct CliRun {
  int code = -1;     // exit status; 124 timed out (`timeout`), >= 128 killed by a signal
  std::string out;   // stdout
  std::string err;   // stderr
};

/// `s` quoted for sh: any bytes, NUL excepted.
inline std::string sh_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

inline std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

/// Runs `env_prefix akv args...` under `timeout` (seconds). `env_prefix` is shell text put
/// before the command ("AKV_THREADS=abc", "ulimit -v 2000000;"); args are quoted one by one.
inline CliRun run_akv(const std::vector<std::string>& args, const std::string& env_prefix = "", int timeout_s = 120) {
  static int counter = 0;
  const std::string base = ::testing::TempDir() + "akv_cli_" + std::to_string(::getpid()) + "_" + std::to_string(counter++);
  std::string cmd = "(" + env_prefix + " exec timeout -s KILL " + std::to_string(timeout_s) + " " + sh_quote(AKV_CLI);
  for (const std::string& a : args) cmd += " " + sh_quote(a);
  cmd += ") >" + sh_quote(base + ".out") + " 2>" + sh_quote(base + ".err");
  const int st = std::system(cmd.c_str());
  CliRun r;
  r.code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
  r.out = slurp(base + ".out");
  r.err = slurp(base + ".err");
  std::remove((base + ".out").c_str());
  std::remove((base + ".err").c_str());
  return r;
}

/// What stdout may hold after a run that exited 2 or 3 (spec/input.md IN5): nothing, or under
/// --json exactly one object {"error": {"code": string, "message": string}}.
inline bool empty_or_json_error(const std::string& out) {
  if (out.empty()) return true;
  const nlohmann::json j = nlohmann::json::parse(out, nullptr, false);
  return j.is_object() && j.size() == 1 && j.contains("error") && j["error"].is_object() && j["error"].size() == 2 &&
         j["error"].contains("code") && j["error"]["code"].is_string() && j["error"].contains("message") &&
         j["error"]["message"].is_string();
}

/// Writes `bytes` to a temporary file named after `name` and returns its path.
inline std::string temp_bytes(const std::string& name, const std::string& bytes) {
  const std::string path = ::testing::TempDir() + "akv_in_" + name;
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

}  // namespace akv::test
