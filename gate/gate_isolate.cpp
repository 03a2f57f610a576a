#include "gate/gate_isolate.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <dirent.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "reference/error.hpp"
#include "reference/strict.hpp"

extern char** environ;

namespace akv::gate {

namespace {

constexpr size_t kOutputKeep = 64 * 1024;          // the tail of the child's output kept
constexpr size_t kReportMax = 16u * 1024u * 1024u;  // a report larger than this is no report

struct Pipe {
  int fd[2] = {-1, -1};
  Pipe() {
    if (::pipe2(fd, O_CLOEXEC) != 0)
      throw Error(ErrorCode::kOutOfResources, std::string("gate: cannot make a pipe for a child process: ") + std::strerror(errno));
    ::fcntl(fd[0], F_SETFL, ::fcntl(fd[0], F_GETFL) | O_NONBLOCK);
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

// Reads what `fd` has now into `dst` (no waiting); false at end of file or error.
bool drain(int fd, std::string& dst, size_t keep_tail, size_t max, bool& over) {
  char buf[65536];
  for (;;) {
    const ssize_t got = ::read(fd, buf, sizeof buf);
    if (got > 0) {
      if (keep_tail) {
        dst.append(buf, static_cast<size_t>(got));
        if (dst.size() > 2 * keep_tail) dst.erase(0, dst.size() - keep_tail);
      } else if (dst.size() + static_cast<size_t>(got) > max) {
        over = true;  // keep reading (the child must not block), keep nothing more
      } else {
        dst.append(buf, static_cast<size_t>(got));
      }
      continue;
    }
    if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    if (got < 0 && errno == EINTR) continue;
    return false;
  }
}

std::string signal_name(int sig) {
  const char* abbrev = sigabbrev_np(sig);  // NULL for real-time signals and unknown numbers
  const char* descr = sigdescr_np(sig);
  std::string s = "signal " + std::to_string(sig);
  if (abbrev != nullptr || descr != nullptr)
    s += std::string(" (") + (abbrev ? std::string("SIG") + abbrev : "") + (abbrev && descr ? ": " : "") + (descr ? descr : "") + ")";
  else if (sig >= SIGRTMIN && sig <= SIGRTMAX)
    s += " (SIGRTMIN+" + std::to_string(sig - SIGRTMIN) + ")";
  return s;
}

std::atomic<bool> g_running{false};
std::atomic<pid_t> g_child_pid{0};  // the child running now, for the signal handler

// The gate killed (Ctrl-C, a CI's timeout): its child's group goes with it, then the signal.
void on_fatal_signal(int sig) {
  const pid_t pid = g_child_pid.load();
  if (pid > 0) {
    ::kill(-pid, SIGKILL);
    ::kill(pid, SIGKILL);
  }
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

// Kills and reaps every process left under this one (a library's forks, daemons included:
// the gate is their subreaper, so they are re-parented here when their parent ends).
void reap_descendants() {
  const pid_t self = ::getpid();
  for (int round = 0; round < 100; ++round) {
    bool found = false;
    if (DIR* d = ::opendir("/proc")) {
      while (dirent* e = ::readdir(d)) {
        const pid_t p = static_cast<pid_t>(std::atol(e->d_name));
        if (p <= 0) continue;
        char path[64], buf[512];
        std::snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(p));
        FILE* f = std::fopen(path, "r");
        if (f == nullptr) continue;
        const size_t n = std::fread(buf, 1, sizeof buf - 1, f);
        std::fclose(f);
        buf[n] = '\0';
        const char* close_paren = std::strrchr(buf, ')');  // comm may hold spaces and parens
        int ppid = 0;
        if (close_paren != nullptr && std::sscanf(close_paren + 1, " %*c %d", &ppid) == 1 && ppid == self) {
          ::kill(p, SIGKILL);
          found = true;
        }
      }
      ::closedir(d);
    }
    while (::waitpid(-1, nullptr, WNOHANG) > 0) {
    }
    if (!found) return;
    ::usleep(1000);
  }
}
std::string g_library;  // set before g_running, read only by on_exit

void on_exit() {
  if (!g_running.load()) return;
  const std::string msg = "akv: error: bad_kernels: " + printable(g_library, 300) +
                          ": the process exited (exit() called, by the kernel library?) before the gate gave its verdict\n";
  if (::write(STDERR_FILENO, msg.data(), msg.size()) < 0) {
  }
  ::_exit(2);
}

}  // namespace

std::string ChildRun::what(int timeout_s) const {
  switch (end) {
    case End::kTimedOut:
      return "did not finish within " + std::to_string(timeout_s) +
             " s (--check-timeout): a hang, a deadlock or a far too slow kernel; its process was killed";
    case End::kSignaled:
      return "crashed: its process died of " + signal_name(status) + ", in the library or in akv";
    case End::kExited:
      break;
  }
  return "its process exited with status " + std::to_string(status) + " without a report" +
         (status == 0 || status == 1 ? " (exit() called by the library, or its output in the way?)" : "");
}

std::string ChildRun::tail(size_t lines) const {
  std::vector<std::string> all;
  for (size_t at = 0; at < output.size();) {
    size_t nl = output.find('\n', at);
    if (nl == std::string::npos) nl = output.size();
    // RapidCheck's banner of its default configuration says nothing of the check.
    if (nl > at && output.compare(at, 20, "Using configuration:") != 0) all.push_back(output.substr(at, nl - at));
    at = nl + 1;
  }
  std::string out;
  for (size_t i = all.size() > lines ? all.size() - lines : 0; i < all.size(); ++i) out += "\n  | " + printable(all[i], 300);
  return out;
}

ChildRun run_child(const std::vector<std::string>& args, int timeout_s) {
  Pipe rep, out;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);  // never the gate's stdin
  posix_spawn_file_actions_adddup2(&fa, out.fd[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&fa, out.fd[1], STDERR_FILENO);
  posix_spawn_file_actions_adddup2(&fa, rep.fd[1], 3);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);  // its own group: killed whole, forks included
  std::vector<std::string> argv_s{"akv"};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, "/proc/self/exe", &fa, &attr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) throw Error(ErrorCode::kOutOfResources, std::string("gate: cannot start a child process: ") + std::strerror(rc));
  g_child_pid.store(pid);
  rep.close_end(1);
  out.close_end(1);

  ChildRun r;
  bool over = false, rep_open = true, out_open = true, exited = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  for (;;) {
    // Exited yet? WNOWAIT keeps the zombie, so its process group id stays its own until the kill below.
    siginfo_t info{};
    if (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid) exited = true;
    if (rep_open) rep_open = drain(rep.fd[0], r.report, 0, kReportMax, over);
    if (out_open) out_open = drain(out.fd[0], r.output, kOutputKeep, 0, over);
    // Done when it exited (what it wrote before is read above; a process it forked may hold the
    // pipes open) or both pipes closed and it exits.
    if (exited) break;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) {
      r.end = ChildRun::End::kTimedOut;
      break;
    }
    pollfd p[2] = {{rep_open ? rep.fd[0] : -1, POLLIN, 0}, {out_open ? out.fd[0] : -1, POLLIN, 0}};
    ::poll(p, 2, static_cast<int>(std::min<long long>(left, rep_open || out_open ? 50 : 10)));
  }
  ::kill(-pid, SIGKILL);  // the group: the child when it timed out, and anything it left behind
  if (!exited) ::kill(pid, SIGKILL);  // a child that left its group
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  g_child_pid.store(0);
  reap_descendants();  // what escaped the group (setsid, setpgid) and was re-parented here
  if (r.end != ChildRun::End::kTimedOut) {
    if (WIFSIGNALED(status)) {
      r.end = ChildRun::End::kSignaled;
      r.status = WTERMSIG(status);
    } else {
      r.status = WEXITSTATUS(status);
    }
  }
  r.has_report = !over && !r.report.empty();
  return r;
}

gate::Check check_from_child(const ChildRun& run, gate::Check skeleton, int timeout_s, const std::string& rerun) {
  if (run.end == ChildRun::End::kExited && (run.status == 0 || run.status == 1) && run.has_report) {
    try {
      const nlohmann::json j = nlohmann::json::parse(run.report);  // our child's report: any fault reads as none
      if (j.contains("checks") && j["checks"].is_array() && j["checks"].size() == 1) {
        gate::Check c = gate::check_from_json(j["checks"][0]);
        if (c.property == skeleton.property) return c;
      }
    } catch (const std::exception&) {  // below: no report
    }
  }
  skeleton.result = "fail";
  skeleton.message = run.what(timeout_s) + "; the gate went on with the next check" + run.tail() +
                     "\n  re-run it in one process (a debugger sees it): " + rerun;
  return skeleton;
}

void gate_running(bool running, const std::string& library) {
  if (running) g_library = library;
  g_running.store(running);
}

void ensure_std_fds() {
  for (int fd = 0; fd <= 2; ++fd)
    if (::fcntl(fd, F_GETFD) < 0) {
      const int n = ::open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);  // lowest free fd: this one
      if (n >= 0 && n != fd) {
        ::dup2(n, fd);
        ::close(n);
      }
    }
}

void supervise_children() {
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) ::signal(sig, on_fatal_signal);
}

void exit_guard(bool child) {
  if (child) ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // the gate that started it is gone: so is it
  static const bool once = std::atexit(on_exit) == 0;
  (void)once;
}

}  // namespace akv::gate
