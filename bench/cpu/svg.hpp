// A minimal SVG line chart, so the benchmark's plots need no plotting library.
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace akv::bench {

struct Series {
  std::string label;
  std::string color;  // CSS colour
  std::vector<std::pair<double, double>> points;
};

/// Writes a line chart of `series` (axes from 0 to the largest x and y) to `path`.
/// Throws std::runtime_error when the file cannot be written.
void write_svg(const std::string& path, const std::string& title, const std::string& xlabel, const std::string& ylabel,
               const std::vector<Series>& series);

}  // namespace akv::bench
