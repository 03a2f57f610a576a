#include "gate/runner.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <rapidcheck.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "gate/environment.hpp"
#include "gate/gate_isolate.hpp"
#include "optimized/composed/op_set.hpp"
#include "reference/error.hpp"

namespace akv::gate {

std::vector<std::string> same_gate(const GateArgs& a) {
  std::vector<std::string> v{"gate", "--kernels", a.kernels, "--cases", std::to_string(a.opt.cases), "--seed",
                             std::to_string(a.opt.seed), "--model", a.opt.model, "--out", a.opt.out};
  if (a.opt.e2e_cases > 0) v.insert(v.end(), {"--e2e-cases", std::to_string(a.opt.e2e_cases)});
  if (a.opt.budget_s != gate::Options{}.budget_s) v.insert(v.end(), {"--budget", fmt::format("{:g}", a.opt.budget_s)});
  if (!a.ops.empty()) v.insert(v.end(), {"--ops", a.ops});
  if (a.opt.kv_type != KvType::kF32) v.insert(v.end(), {"--kv-type", kv_type_name(a.opt.kv_type)});
  return v;
}

std::string shell_words(const std::vector<std::string>& v) {
  std::string s = "akv";
  for (const auto& w : v) s += " " + gate::shell_word(w);
  return s;
}

void check_rc_params() {
  if (const char* p = std::getenv("RC_PARAMS")) {
    try {
      (void)rc::detail::configFromString(p, rc::detail::Configuration{});
    } catch (const rc::detail::ConfigurationException& e) {
      throw Error(ErrorCode::kBadInput, std::string("RC_PARAMS: ") + e.what());
    }
  }
  fflush(stderr);
  const int saved = ::dup(STDERR_FILENO), null = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (saved >= 0 && null >= 0) ::dup2(null, STDERR_FILENO);
  (void)rc::detail::configuration();
  if (saved >= 0 && null >= 0) ::dup2(saved, STDERR_FILENO);
  if (saved >= 0) ::close(saved);
  if (null >= 0) ::close(null);
}

void check_out(const std::string& out) {
  std::error_code ec;
  std::filesystem::create_directories(out, ec);
  if (!std::filesystem::is_directory(out, ec)) throw Error(ErrorCode::kBadInput, "--out: '" + out + "' is not a directory and cannot be made one");
  if (::access(out.c_str(), W_OK | X_OK) != 0) throw Error(ErrorCode::kBadInput, "--out: cannot write in '" + out + "'");
}

void check_selection(const GateArgs& a, uint32_t select, const LibInfo& lib) {
  if (!a.ops.empty() && (select & ~lib.provides))
    throw Error(ErrorCode::kBadInput, "--ops: " + a.kernels + " does not provide " + op_list(select & ~lib.provides) +
                                          " (it provides " + op_list(lib.provides) + ")");
  if (lib.own == 0)
    throw Error(ErrorCode::kBadKernels, a.kernels + ": provides none of the ops to check (provides: " + op_list(lib.provides) + ")");
}

void write_all(int fd, const std::string& text, const std::string& library) {
  for (size_t at = 0; at < text.size();) {
    const ssize_t n = ::write(fd, text.data() + at, text.size() - at);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      throw Error(ErrorCode::kBadKernels, library + ": cannot write the gate's report to fd " + std::to_string(fd) + " (" +
                                              std::strerror(errno) + "; closed or replaced by the library?)");
    at += static_cast<size_t>(n);
  }
}

LibInfo probe(const GateArgs& a) {
  std::vector<std::string> args{"gate", "--kernels", a.kernels, "--describe", "--in-process", "--report-fd", "3"};
  if (!a.ops.empty()) args.insert(args.end(), {"--ops", a.ops});
  const ChildRun run = run_child(args, a.check_timeout_s);
  if (run.end == ChildRun::End::kExited && run.status == 0 && run.has_report) {
    try {
      const nlohmann::json j = nlohmann::json::parse(run.report);  // our child's report: any fault reads as none
      return {j.at("name").get<std::string>(), j.at("provides").get<uint32_t>(), j.at("own").get<uint32_t>()};
    } catch (const std::exception&) {  // below
    }
  }
  if (run.end == ChildRun::End::kExited && run.status == 2) {
    // The child's one error line, "akv: error: CODE: message": the same error here.
    const size_t at = run.output.rfind("akv: error: ");
    if (at != std::string::npos) {
      const std::string line = run.output.substr(at + 12, run.output.find('\n', at) - at - 12);
      const size_t colon = line.find(": ");
      ErrorCode code;
      if (colon != std::string::npos && error_code_from_name(std::string_view(line).substr(0, colon), code))
        throw Error(code, line.substr(colon + 2));
    }
  }
  const std::string last = run.tail(1);
  throw Error(ErrorCode::kBadKernels, a.kernels + ": loading it (in a process of its own) " + run.what(a.check_timeout_s) +
                                          (last.empty() ? "" : "; its last output: " + last.substr(5)));
}

gate::Check run_in_child(const GateArgs& a, const std::string& id) {
  std::vector<std::string> args = same_gate(a);
  args.insert(args.end(), {"--check", id, "--in-process"});
  std::vector<std::string> child_args = args;
  child_args.insert(child_args.end(), {"--report-fd", "3"});
  const auto t0 = std::chrono::steady_clock::now();
  gate::Check c = check_from_child(run_child(child_args, a.check_timeout_s), gate::describe_check(id), a.check_timeout_s,
                                   shell_words(args));
  c.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return c;
}

}  // namespace akv::gate
