#include "runtime/build_info.hpp"

#include "akv_build_id.h"  // AKV_GIT_COMMIT, written at build time (cmake/build_id.cmake)

#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <vector>

#include "readers/mapped_file.hpp"
#include "reference/error.hpp"
#include "runtime/digest.hpp"

namespace akv {

namespace fs = std::filesystem;

std::string akv_version() { return AKV_VERSION; }
std::string akv_commit() { return AKV_GIT_COMMIT; }

std::string file_or_folder_sha256(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(path, ec))
      if (e.is_regular_file()) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    std::string list;
    for (const std::string& n : names) list += n + " " + file_or_folder_sha256((fs::path(path) / n).string()) + "\n";
    return sha256_hex(list);
  }
  try {
    const auto bytes = readers::map_file(path);
    return sha256_hex({bytes->data(), static_cast<size_t>(bytes->size())});
  } catch (const Error& e) {
    throw Error(ErrorCode::kBadInput, path + ": cannot be read for its SHA-256: " + e.what());
  }
}

std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  for (std::string line; std::getline(f, line);)
    if (line.rfind("model name", 0) == 0) {
      const size_t c = line.find(':');
      return c == std::string::npos ? line : line.substr(c + 2);
    }
  return "unknown";
}

std::string utc_now() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace akv
