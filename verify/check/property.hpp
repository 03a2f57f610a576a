// The per-op checks' RapidCheck property as a Report, over the one runner (rc_runner.hpp).
#pragma once
#include <functional>
#include <string>

#include "verify/check/rc_runner.hpp"
#include "verify/check/report.hpp"

namespace akv::check {

/// Runs `body` (RC_ASSERTs on values drawn with `*gen`) as a RapidCheck property named `id`
/// (its reproduce-string key) with at least kMinCases cases. The Report counts one comparison
/// for the verdict and one for the case count; a failure carries RapidCheck's message, with
/// the shrunk case and the reproduce string.
Report check_property(const std::string& id, const std::function<void()>& body);

}  // namespace akv::check
