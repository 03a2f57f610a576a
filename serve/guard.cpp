#include "serve/guard.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "runtime/digest.hpp"

extern char** environ;

namespace akv::serve {

Guard::Guard(GuardOptions opt) : opt_(std::move(opt)) {
  for (const std::string& p : opt_.patterns) {
    try {
      regexes_.emplace_back(p, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      throw Error(ErrorCode::kBadInput, fmt::format("--guard: '{}' is not a regular expression ({})", p, e.what()));
    }
  }
  if (opt_.timeout_s < 1 || opt_.timeout_s > 3600)
    throw Error(ErrorCode::kBadInput, fmt::format("--guard-timeout {}: not in [1, 3600]", opt_.timeout_s));
}

bool Guard::flags(const std::string& content, const std::string& scope) {
  for (const std::regex& re : regexes_)
    if (std::regex_search(content, re)) return true;
  if (opt_.command.empty()) return false;
  // Kept per scope (SV10): another caller's verdict, and its timing, are never reused.
  const std::string key = sha256_hex(scope) + sha256_hex(content);
  {
    std::lock_guard lk(mu_);
    if (const auto it = verdicts_.find(key); it != verdicts_.end()) return it->second;
  }
  const bool v = run_command(content);  // outside the lock: commands run concurrently
  std::lock_guard lk(mu_);
  if (verdicts_.size() >= kMaxVerdicts) verdicts_.clear();
  verdicts_.emplace(key, v);
  return v;
}

namespace {
// Closes a descriptor once.
struct Fd {
  int fd = -1;
  ~Fd() { reset(); }
  void reset() {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
};
}  // namespace

// posix_spawn (libc's, no fork of a threaded process): /bin/sh -c COMMAND in a process group
// of its own, so that a timeout kills what the shell started too; SIGPIPE at its default in
// the child whatever the server does with it. The content goes to stdin through a
// non-blocking pipe, so a command that never reads cannot stall the request past the limit.
bool Guard::run_command(const std::string& content) const {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(opt_.timeout_s);
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) throw GuardFailed(fmt::format("--guard-command: cannot make a pipe ({})", std::strerror(errno)));
  Fd rd{p[0]}, wr{p[1]};
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, rd.fd, 0);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawnattr_t at;
  posix_spawnattr_init(&at);
  sigset_t def, none;
  sigemptyset(&def);
  sigaddset(&def, SIGPIPE);
  sigemptyset(&none);
  posix_spawnattr_setsigdefault(&at, &def);
  posix_spawnattr_setsigmask(&at, &none);  // the server blocks SIGTERM for sigwait; the child must not
  posix_spawnattr_setpgroup(&at, 0);
  posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETPGROUP);
  std::string sh = "/bin/sh", dash_c = "-c", cmd = opt_.command;
  char* argv[] = {sh.data(), dash_c.data(), cmd.data(), nullptr};
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, "/bin/sh", &fa, &at, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&at);
  if (rc != 0) throw GuardFailed(fmt::format("--guard-command: cannot start /bin/sh ({})", std::strerror(rc)));
  rd.reset();
  ::fcntl(wr.fd, F_SETFL, O_NONBLOCK);
  auto left_ms = [&] {
    return static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count());
  };
  // Write the content; a command that exits without reading it all is not an error (EPIPE).
  // SIGPIPE is blocked in this thread while writing and the one a write raised is taken, so
  // the server's disposition of it does not matter.
  sigset_t pipe_sig, old_mask;
  sigemptyset(&pipe_sig);
  sigaddset(&pipe_sig, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_sig, &old_mask);
  for (size_t off = 0; off < content.size() && left_ms() > 0;) {
    pollfd pf{wr.fd, POLLOUT, 0};
    if (::poll(&pf, 1, std::min(left_ms(), 50)) <= 0) continue;
    const ssize_t n = ::write(wr.fd, content.data() + off, content.size() - off);
    if (n > 0) off += static_cast<size_t>(n);
    else if (n < 0 && errno != EAGAIN && errno != EINTR) break;
  }
  wr.reset();
  const timespec zero{0, 0};
  while (sigtimedwait(&pipe_sig, nullptr, &zero) > 0) {
  }
  pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
  int status = 0;
  for (;;) {
    const pid_t w = ::waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    if (w < 0 && errno != EINTR) throw GuardFailed(fmt::format("--guard-command: waitpid failed ({})", std::strerror(errno)));
    if (left_ms() <= 0) {
      ::kill(-pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      throw GuardFailed(fmt::format("--guard-command: no verdict within {} s (--guard-timeout); killed", opt_.timeout_s));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) <= 1) return WEXITSTATUS(status) == 1;
  if (WIFEXITED(status))
    throw GuardFailed(fmt::format("--guard-command: exit status {} (0: clean, 1: flagged; anything else fails the request)",
                                  WEXITSTATUS(status)));
  throw GuardFailed(fmt::format("--guard-command: killed by signal {}", WIFSIGNALED(status) ? WTERMSIG(status) : 0));
}

}  // namespace akv::serve
