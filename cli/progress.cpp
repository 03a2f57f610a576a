#include "cli/progress.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fmt/format.h>

namespace akv::cli {

WitnessProgress tty_progress(const std::string& command) {
  if (!::isatty(STDERR_FILENO)) return {};
  const auto t0 = std::chrono::steady_clock::now();
  return [command, t0](const std::string& phase, size_t done, size_t total) {
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::fputs(fmt::format("\r\033[K{}: {}: {}/{} tokens ({:.0f} s)", command, phase, done, total, s).c_str(), stderr);
    std::fflush(stderr);
  };
}

void end_progress() {
  if (!::isatty(STDERR_FILENO)) return;
  std::fputs("\r\033[K", stderr);
  std::fflush(stderr);
}

}  // namespace akv::cli
