// The leakage reports as JSON, a Markdown table and one SVG bar chart (spec/leakage.md L9).
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "leakage/leakage.hpp"

namespace akv {

/// One conversation's report as a JSON object (fields as LeakageReport, policies by name).
nlohmann::json to_json(const LeakageReport& r);

/// The Markdown tables of `reports`: one row per (conversation, policy) with max|Δ|, KL,
/// top-1, rank, first differing continuation token, injected strings found (never's beside),
/// tokens recomputed and ms; then the cost table (start, middle, end) when measured.
std::string to_markdown(const std::vector<LeakageReport>& reports);

/// One grouped bar chart, KL(never || policy) per conversation (group) and policy (bar), on a
/// log10 axis; a KL of exactly 0 is drawn as a marker on the axis, labelled "0".
std::string kl_svg(const std::vector<LeakageReport>& reports);

}  // namespace akv
