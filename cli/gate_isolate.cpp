#include "cli/gate_isolate.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <vector>

#include "reference/error.hpp"

extern char** environ;

namespace akv::cli {

namespace {

constexpr size_t kStderrKeep = 64 * 1024;  // the tail of the child's stderr kept for the report

// The last `lines` non-empty lines of `text`, each on its own indented line.
std::string tail_lines(const std::string& text, size_t lines) {
  std::vector<std::string> all;
  for (size_t at = 0; at < text.size();) {
    size_t nl = text.find('\n', at);
    if (nl == std::string::npos) nl = text.size();
    // RapidCheck's banner of its default configuration says nothing of the check (the gate sets the seed).
    if (nl > at && text.compare(at, 20, "Using configuration:") != 0) all.push_back(text.substr(at, nl - at));
    at = nl + 1;
  }
  std::string out;
  for (size_t i = all.size() > lines ? all.size() - lines : 0; i < all.size(); ++i) out += "\n  | " + all[i];
  return out;
}

struct Pipe {
  int fd[2] = {-1, -1};
  Pipe() {
    if (::pipe2(fd, O_CLOEXEC) != 0)
      throw Error(ErrorCode::kOutOfResources, std::string("gate: cannot make a pipe for a check's process: ") + std::strerror(errno));
  }
  ~Pipe() {
    for (int f : fd)
      if (f >= 0) ::close(f);
  }
  void close_end(int i) {
    if (fd[i] >= 0) ::close(fd[i]);
    fd[i] = -1;
  }
};

gate::Check failed(gate::Check c, const std::string& what, const std::string& err, const std::string& rerun) {
  c.result = "fail";
  c.message = what + tail_lines(err, 8) + "\n  re-run it in one process (a debugger sees it): " + rerun;
  return c;
}

}  // namespace

gate::Check run_check_in_child(const std::vector<std::string>& args, gate::Check skeleton, int timeout_s,
                               const std::string& rerun) {
  Pipe out, err;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, out.fd[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&fa, err.fd[1], STDERR_FILENO);
  std::vector<std::string> argv_s{"akv"};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, "/proc/self/exe", &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0)
    throw Error(ErrorCode::kOutOfResources, std::string("gate: cannot start a process for check ") + skeleton.property + ": " + std::strerror(rc));
  out.close_end(1);
  err.close_end(1);

  std::string out_text, err_text;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  bool timed_out = false;
  for (bool out_open = true, err_open = true; out_open || err_open;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    pollfd p[2] = {{out_open ? out.fd[0] : -1, POLLIN, 0}, {err_open ? err.fd[0] : -1, POLLIN, 0}};
    const int n = ::poll(p, 2, static_cast<int>(std::min<long long>(left, 1000)));
    if (n < 0 && errno != EINTR) break;
    char buf[65536];
    for (int i = 0; i < 2; ++i) {
      if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t got = ::read(p[i].fd, buf, sizeof buf);
      if (got <= 0) {
        (i == 0 ? out_open : err_open) = false;
        continue;
      }
      std::string& dst = i == 0 ? out_text : err_text;
      dst.append(buf, static_cast<size_t>(got));
      if (i == 1 && dst.size() > 2 * kStderrKeep) dst.erase(0, dst.size() - kStderrKeep);
    }
  }
  if (timed_out) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out)
    return failed(std::move(skeleton),
                  "did not finish within " + std::to_string(timeout_s) +
                      " s (--check-timeout): a hang, a deadlock or a far too slow kernel; its process was killed",
                  err_text, rerun);
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    const char* abbrev = sigabbrev_np(sig);
    return failed(std::move(skeleton),
                  "crashed: its process died of signal " + std::to_string(sig) + " (SIG" + (abbrev ? abbrev : "?") + ": " +
                      sigdescr_np(sig) + "), in the library or in akv; the gate went on with the next check",
                  err_text, rerun);
  }
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (code == 2) {
    std::string line = err_text.substr(0, err_text.find('\n'));
    if (line.rfind("akv: error: ", 0) == 0) line = line.substr(12);
    throw Error(ErrorCode::kBadKernels, skeleton.property + ": " + line);
  }
  if (code == 0 || code == 1) {
    try {
      const nlohmann::json j = nlohmann::json::parse(out_text);
      if (j.contains("checks") && j["checks"].is_array() && j["checks"].size() == 1) {
        gate::Check c = gate::check_from_json(j["checks"][0]);
        if (c.property == skeleton.property) return c;
      }
    } catch (const std::exception&) {  // below: no report
    }
  }
  return failed(std::move(skeleton),
                "its process exited with status " + std::to_string(code) + " without a report of the check", err_text,
                rerun);
}

}  // namespace akv::cli
