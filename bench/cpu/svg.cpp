#include "bench/cpu/svg.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <stdexcept>

namespace akv::bench {

void write_svg(const std::string& path, const std::string& title, const std::string& xlabel, const std::string& ylabel,
               const std::vector<Series>& series) {
  const double W = 640, H = 400, L = 70, R = 20, T = 40, B = 50;
  double xmax = 0, ymax = 0;
  for (const auto& s : series)
    for (auto [x, y] : s.points) xmax = std::max(xmax, x), ymax = std::max(ymax, y);
  xmax = xmax > 0 ? xmax : 1;
  ymax = ymax > 0 ? ymax * 1.1 : 1;
  auto px = [&](double x) { return L + x / xmax * (W - L - R); };
  auto py = [&](double y) { return H - B - y / ymax * (H - T - B); };
  std::string s = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" font-family=\"sans-serif\" font-size=\"12\">\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n<text x=\"{}\" y=\"22\" font-size=\"15\">{}</text>\n",
      W, H, L, title);
  s += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"black\"/>\n", L, H - B, W - R);
  s += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{0}\" y2=\"{2}\" stroke=\"black\"/>\n", L, H - B, T);
  for (int i = 0; i <= 5; ++i) {
    const double x = xmax * i / 5, y = ymax * i / 5;
    s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{:.4g}</text>\n", px(x), H - B + 16, x);
    s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{:.3g}</text>\n", L - 6, py(y) + 4, y);
    s += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#ddd\"/>\n", L, py(y), W - R, py(y));
  }
  s += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", (L + W - R) / 2, H - 12, xlabel);
  s += fmt::format("<text x=\"16\" y=\"{}\" transform=\"rotate(-90 16 {})\" text-anchor=\"middle\">{}</text>\n", (T + H - B) / 2,
                   (T + H - B) / 2, ylabel);
  int row = 0;
  for (const auto& se : series) {
    std::string pts;
    for (auto [x, y] : se.points) {
      pts += fmt::format("{:.1f},{:.1f} ", px(x), py(y));
      s += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"{}\"/>\n", px(x), py(y), se.color);
    }
    s += fmt::format("<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"/>\n", pts, se.color);
    s += fmt::format("<text x=\"{}\" y=\"{}\" fill=\"{}\">{}</text>\n", L + 10, T + 14 + 16 * row++, se.color, se.label);
  }
  s += "</svg>\n";
  std::ofstream out(path);
  if (!out) throw std::runtime_error("cannot write " + path);
  out << s;
}

}  // namespace akv::bench
