// akv audit LOG [--model M] [--json]: re-runs every line of an `akv serve --audit-log` file on a
// cold engine and says which replies reproduced bit for bit (spec/serving.md SV9).
#include <fmt/format.h>

#include <iostream>

#include "cli/commands.hpp"
#include "cli/options.hpp"
#include "runtime/models.hpp"
#include "serve/audit.hpp"
#include "serve/audit_chain.hpp"

namespace akv::cli {

Command add_audit(CLI::App& app) {
  struct Args {
    std::string log, model, pubkey;
    bool json = false;
  };
  auto a = std::make_shared<Args>();
  auto* c = app.add_subcommand("audit", "Replay an akv serve audit log; exit 0 only if every reply reproduces bit for bit");
  c->add_option("LOG", a->log, "The --audit-log file (JSON lines)")->required()->check(nonempty());
  c->add_option("--model", a->model, "Replay on this model instead of the logged one: " + names_help(model_forms()))->check(nonempty());
  c->add_option("--audit-pubkey", a->pubkey,
                "A PEM Ed25519 key (public, or the server's private one): every line must be signed by it")
      ->check(nonempty());
  c->add_flag("--json", a->json, "Print one JSON object");
  return {c, [a] {
            const std::string pinned = a->pubkey.empty() ? "" : serve::ed25519_public_key_hex(a->pubkey);
            const serve::AuditReport r = serve::replay_audit_log(a->log, a->model, pinned);
            if (a->json) {
              nlohmann::json lines = nlohmann::json::array();
              for (const auto& l : r.lines) lines.push_back({{"line", l.line}, {"reproduced", l.reproduced}, {"why", l.why}});
              print_json({{"log", a->log}, {"lines", lines}, {"reproduced", r.reproduced()}, {"replies", r.replies},
                          {"signed", r.signed_log}, {"key", r.key}, {"key_pinned", !pinned.empty()},
                          {"first_failure", r.first_failure() ? nlohmann::json(r.first_failure()) : nlohmann::json(nullptr)},
                          {"cut_lines", r.cut_lines}, {"passed", r.passed()}});
            } else {
              for (const auto& l : r.lines)
                std::cout << fmt::format("line {}: {}\n", l.line, l.reproduced ? "reproduced bit for bit" : "NOT reproduced: " + l.why);
              for (size_t l : r.cut_lines)
                std::cout << fmt::format("line {}: cut by a kill while it was written (its reply never completed); left out\n", l);
              if (r.signed_log)
                std::cout << fmt::format("signed by Ed25519 key {}{}\n", r.key,
                                         pinned.empty() ? " (not pinned: give --audit-pubkey to prove whose key it is)" : " (pinned)");
              else
                std::cout << "not signed: the chain shows lines deleted, reordered or edited, not who wrote them\n";
              if (r.first_failure()) std::cout << fmt::format("first line that fails: {}\n", r.first_failure());
              std::cout << fmt::format("{}: {} of {} lines checked, {} replies replayed{}\n", r.passed() ? "PASS" : "FAIL", r.reproduced(),
                                       r.lines.size(), r.replies, r.replies == 0 ? " (a log without replies proves nothing)" : "");
            }
            return r.passed() ? 0 : 1;
          }};
}

}  // namespace akv::cli
