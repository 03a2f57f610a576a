// How close observed distances come to the proven bounds (spec/bounds.md B10, B14): reported
// beside a check's verdict, never asserted beyond distance <= bound.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

namespace akv::check {

/// The tally of one comparison family: max observed / bound (<= 1 or the check failed), the
/// largest observed distance with the bound there, and how many distances were nonzero.
struct Closeness {
  double max_frac = 0, max_dist = 0, bound_at_max = 0;
  long nonzero = 0, compared = 0;
  /// Records |a - b| against bound; returns whether |a - b| <= bound (NaN fails).
  bool add(double a, double b, double bound) {
    const double dist = std::fabs(a - b);
    ++compared;
    if (dist > 0) ++nonzero;
    if (bound > 0 && std::isfinite(bound)) max_frac = std::max(max_frac, dist / bound);
    if (dist > max_dist) max_dist = dist, bound_at_max = bound;
    return dist <= bound;
  }
  /// One line: "<what>: k of n elements differ; max |opt - ref| = ...".
  std::string line(const std::string& what) const {
    char buf[512];
    std::snprintf(buf, sizeof buf,
                  "%s: %ld of %ld elements differ; max |opt - ref| = %.3g (bound there %.3g); "
                  "max |opt - ref| / bound = %.3g (bound/observed >= %.3g)",
                  what.c_str(), nonzero, compared, max_dist, bound_at_max, max_frac, max_frac > 0 ? 1 / max_frac : 0.0);
    return buf;
  }
};

}  // namespace akv::check
