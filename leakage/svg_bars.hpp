// A minimal grouped bar chart in SVG on a log10 axis, so reports need no plotting library.
#pragma once
#include <string>
#include <vector>

namespace akv {

struct BarSeries {
  std::string label;                // legend entry
  std::string color;                // CSS colour
  std::vector<double> values;       // one per group; >= 0; 0 is drawn as a marker labelled "0"
};

/// The SVG text of a grouped bar chart: `title`, then `subtitle` (provenance: model, version)
/// on a second line, groups[g] on the x axis, one bar per series in each group, each labelled
/// with its value (3 significant digits), heights on a log10 axis spanning the positive values
/// (at least one decade). The chart is at least as wide as its title and subtitle, so no
/// text is cut off.
std::string svg_grouped_bars_log(const std::string& title, const std::string& subtitle, const std::string& ylabel,
                                 const std::vector<std::string>& groups, const std::vector<BarSeries>& series);

}  // namespace akv
