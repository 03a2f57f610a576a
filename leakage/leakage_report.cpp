#include "leakage/leakage_report.hpp"

#include <algorithm>
#include <filesystem>
#include <fmt/format.h>

#include "verify/json_number.hpp"
#include "runtime/build_info.hpp"
#include "leakage/svg_bars.hpp"

namespace akv {

namespace {
std::string base(const std::string& file) { return std::filesystem::path(file).stem().string(); }

std::string joined(const std::vector<std::string>& v, size_t max = 4) {
  if (v.empty()) return "-";
  std::string s;
  for (size_t i = 0; i < v.size() && i < max; ++i) s += (i ? ", " : "") + ("`" + v[i] + "`");
  if (v.size() > max) s += fmt::format(" +{}", v.size() - max);
  return s;
}

// The strings cell: the caller's secrets first, by number (L10: never the string), then the
// injected strings found.
std::string found_cell(const std::vector<std::string>& found, const std::vector<size_t>& secrets) {
  std::string s;
  for (size_t n : secrets) s += fmt::format("{}**secret {}**", s.empty() ? "" : ", ", n);
  if (found.empty()) return s.empty() ? "-" : s;
  return s.empty() ? joined(found) : s + ", " + joined(found);
}

std::string kl_text(double kl) { return kl == 0 ? "0" : fmt::format("{:.3g}", kl); }
}  // namespace

nlohmann::json to_json(const LeakageReport& r) {
  nlohmann::json pols = nlohmann::json::array();
  for (const PolicyResult& p : r.policies)
    pols.push_back({{"policy", policy_name(p.policy)},
                    {"max_abs", json_number(p.max_abs)},
                    {"kl", json_number(p.kl)},
                    {"non_finite", p.non_finite},
                    {"top1_agree", p.top1_agree},
                    {"rank_of_never_top", p.rank_of_never_top},
                    {"logits_identical", p.logits_identical},
                    {"first_diff", p.first_diff},
                    {"continuation", p.continuation},
                    {"continuation_text", p.continuation_text},
                    {"found", p.found},
                    {"secrets_found", p.secrets_found},
                    {"prefix_untouched", p.prefix_untouched},
                    {"truncated_at", p.truncated_at},
                    {"tokens_evicted", p.tokens_evicted},
                    {"tokens_recomputed", p.tokens_recomputed},
                    {"ms_evict", p.ms_evict}});
  nlohmann::json costs = nlohmann::json::array();
  for (const CostResult& c : r.costs)
    costs.push_back({{"where", c.where},
                     {"message", c.message},
                     {"policy", policy_name(c.policy)},
                     {"tokens_evicted", c.tokens_evicted},
                     {"tokens_recomputed", c.tokens_recomputed},
                     {"ms_evict", c.ms_evict},
                     {"tokens_rebuild", c.tokens_rebuild},
                     {"ms_rebuild", c.ms_rebuild}});
  return {{"file", r.file},
          {"model", r.model},
          {"model_source", r.model_source},
          {"backend", r.backend},
          {"isa", r.isa},
          {"evicted", r.evicted},
          {"messages", r.messages},
          {"tokens_poisoned", r.tokens_poisoned},
          {"tokens_never", r.tokens_never},
          {"span_start", r.span_start},
          {"candidates", r.candidates},
          {"never_continuation", r.never_continuation},
          {"never_continuation_text", r.never_continuation_text},
          {"never_found", r.never_found},
          {"secrets", r.secrets},
          {"never_secrets_found", r.never_secrets_found},
          {"ms_build_poisoned", r.ms_build_poisoned},
          {"ms_build_never", r.ms_build_never},
          {"exact_ok", r.exact_ok()},
          {"policies", pols},
          {"costs", costs}};
}

std::string to_markdown(const std::vector<LeakageReport>& reports) {
  std::string s =
      "| conversation | evicted (tokens) | policy | max\\|Δ\\| | KL(never‖policy) | top-1 | rank | first diff | injected strings in continuation (never's) | recomputed | evict ms (rebuild ms) |\n"
      "|---|---|---|---:|---:|:-:|---:|---:|---|---:|---:|\n";
  for (const LeakageReport& r : reports)
    for (const PolicyResult& p : r.policies) {
      std::string ev;
      for (size_t i : r.evicted) ev += (ev.empty() ? "" : ",") + std::to_string(i);
      s += fmt::format("| {} | {} ({}) | {} | {:.4g} | {} | {} | {} | {} | {} ({}) | {} / {} | {:.1f} ({:.0f}) |\n", base(r.file), ev,
                       r.tokens_poisoned - r.tokens_never, policy_name(p.policy), p.max_abs, kl_text(p.kl),
                       p.top1_agree ? "yes" : "no", p.rank_of_never_top, p.first_diff < 0 ? "none" : std::to_string(p.first_diff),
                       found_cell(p.found, p.secrets_found), found_cell(r.never_found, r.never_secrets_found),
                       p.tokens_recomputed, r.tokens_never, p.ms_evict,
                       r.ms_build_never);
    }
  bool any = false;
  for (const LeakageReport& r : reports) any = any || !r.costs.empty();
  if (!any) return s;
  s += "\n| conversation | where (message, tokens) | policy | tokens recomputed | full rebuild tokens | evict ms | rebuild ms |\n"
       "|---|---|---|---:|---:|---:|---:|\n";
  for (const LeakageReport& r : reports)
    for (const CostResult& c : r.costs)
      s += fmt::format("| {} | {} ({}, {}) | {} | {} | {} | {:.1f} | {:.0f} |\n", base(r.file), c.where, c.message, c.tokens_evicted,
                       policy_name(c.policy), c.tokens_recomputed, c.tokens_rebuild, c.ms_evict, c.ms_rebuild);
  return s;
}

std::string kl_svg(const std::vector<LeakageReport>& reports) {
  std::vector<std::string> groups;
  std::vector<BarSeries> series;
  const auto color = [](EvictPolicy p) {
    switch (p) {
      case EvictPolicy::kKeep: return "#d62728";
      case EvictPolicy::kMask: return "#ff7f0e";
      case EvictPolicy::kKShift: return "#1f77b4";
      case EvictPolicy::kExact: return "#2ca02c";
    }
    return "#888";
  };
  for (const LeakageReport& r : reports) {
    groups.push_back(base(r.file));
    for (const PolicyResult& p : r.policies) {
      auto it = std::find_if(series.begin(), series.end(), [&](const BarSeries& b) { return b.label == policy_name(p.policy); });
      if (it == series.end()) {
        series.push_back({policy_name(p.policy), color(p.policy), std::vector<double>(reports.size(), 0.0)});
        it = series.end() - 1;
      }
      it->values[groups.size() - 1] = p.kl;
    }
  }
  std::string sub = fmt::format("akv {} (commit {})", akv_version(), akv_commit().substr(0, 12));
  if (!reports.empty()) {
    const LeakageReport& r = reports[0];
    const bool synthetic = r.model_source.rfind("synthetic", 0) == 0;
    sub = fmt::format("model {} ({}), {}", r.model,
                      synthetic ? r.model_source : "sha256 " + file_or_folder_sha256(r.model_source).substr(0, 16), sub);
  }
  return svg_grouped_bars_log("KL(never-shown || policy) of the next-token distribution after the reply prompt", sub,
                              "KL (nats, log scale; 0 = bitwise identical)", groups, series);
}

}  // namespace akv
