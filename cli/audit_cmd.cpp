// akv audit LOG [--model M] [--json]: re-runs every line of an `akv serve --audit-log` file on a
// cold engine and says which replies reproduced bit for bit (spec/serving.md SV9).
#include <fmt/format.h>

#include <iostream>

#include "cli/commands.hpp"
#include "cli/options.hpp"
#include "serve/audit.hpp"

namespace akv::cli {

Command add_audit(CLI::App& app) {
  struct Args {
    std::string log, model;
    bool json = false;
  };
  auto a = std::make_shared<Args>();
  auto* c = app.add_subcommand("audit", "Replay an akv serve audit log; exit 0 only if every reply reproduces bit for bit");
  c->add_option("LOG", a->log, "The --audit-log file (JSON lines)")->required()->check(nonempty());
  c->add_option("--model", a->model, "Replay on this model instead of the logged one")->check(nonempty());
  c->add_flag("--json", a->json, "Print one JSON object");
  return {c, [a] {
            const serve::AuditReport r = serve::replay_audit_log(a->log, a->model);
            if (a->json) {
              nlohmann::json lines = nlohmann::json::array();
              for (const auto& l : r.lines) lines.push_back({{"line", l.line}, {"reproduced", l.reproduced}, {"why", l.why}});
              print_json({{"log", a->log}, {"lines", lines}, {"reproduced", r.reproduced()},
                          {"cut_lines", r.cut_lines}, {"passed", r.passed()}});
            } else {
              for (const auto& l : r.lines)
                std::cout << fmt::format("line {}: {}\n", l.line, l.reproduced ? "reproduced bit for bit" : "NOT reproduced: " + l.why);
              for (size_t l : r.cut_lines)
                std::cout << fmt::format("line {}: cut by a kill while it was written (its reply never completed); left out\n", l);
              std::cout << fmt::format("{}: {} of {} replies reproduced{}\n", r.passed() ? "PASS" : "FAIL", r.reproduced(),
                                       r.lines.size(), r.lines.empty() ? " (an empty log proves nothing)" : "");
            }
            return r.passed() ? 0 : 1;
          }};
}

}  // namespace akv::cli
