#include "leakage/svg_bars.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

namespace akv {

namespace {
std::string esc(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '<') o += "&lt;";
    else if (c == '>') o += "&gt;";
    else if (c == '&') o += "&amp;";
    else if (c == '"') o += "&quot;";
    else o += c;
  }
  return o;
}
}  // namespace

std::string svg_grouped_bars_log(const std::string& title, const std::string& subtitle, const std::string& ylabel,
                                 const std::vector<std::string>& groups, const std::vector<BarSeries>& series) {
  double lo = INFINITY, hi = -INFINITY;
  for (const BarSeries& s : series)
    for (double v : s.values)
      if (v > 0) lo = std::min(lo, v), hi = std::max(hi, v);
  if (!(lo <= hi)) lo = 1e-6, hi = 1;
  const int d0 = static_cast<int>(std::floor(std::log10(lo))), d1 = std::max(d0 + 1, static_cast<int>(std::ceil(std::log10(hi))));
  const double left = 80, top = 96, plot_h = 320, bar_w = 14, gap = 18;
  const double group_w = series.size() * bar_w + gap;
  const double plot_w = std::max(200.0, groups.size() * group_w);
  // Text widths at most 0.62 em a character (sans-serif), so the title is never cut off.
  const double text_w = std::max(title.size() * 14 * 0.62, subtitle.size() * 11 * 0.62);
  // Group labels run down at 45 degrees from under the axis: room for the longest.
  size_t longest = 0;
  for (const std::string& g : groups) longest = std::max(longest, g.size());
  const double label_drop = longest * 11 * 0.62 * 0.71 + 40;
  const double W = std::max(left + plot_w + std::max(170.0, label_drop), 20 + text_w + 20), H = top + plot_h + 22 + label_drop;
  auto y_of = [&](double v) { return top + plot_h * (1 - (std::log10(v) - d0) / (d1 - d0)); };
  std::string o = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{:.0f}\" height=\"{:.0f}\" font-family=\"sans-serif\" font-size=\"11\">\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      "<text x=\"20\" y=\"24\" font-size=\"14\">{}</text>\n"
      "<text x=\"20\" y=\"42\" fill=\"#555\">{}</text>\n",
      W, H, esc(title), esc(subtitle));
  for (int d = d0; d <= d1; ++d) {
    const double y = y_of(std::pow(10.0, d));
    o += fmt::format("<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#ddd\"/>\n", left, y, left + plot_w, y);
    o += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">1e{}</text>\n", left - 6, y + 4, d);
  }
  o += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"end\">0</text>\n", left - 6, top + plot_h + 16);
  o += fmt::format("<text transform=\"translate(20,{:.1f}) rotate(-90)\" text-anchor=\"middle\">{}</text>\n", top + plot_h / 2,
                   esc(ylabel));
  o += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"black\"/>\n", left, top,
                   top + plot_h + 12);
  for (size_t g = 0; g < groups.size(); ++g) {
    const double x0 = left + gap / 2 + g * group_w;
    for (size_t s = 0; s < series.size(); ++s) {
      const double v = g < series[s].values.size() ? series[s].values[g] : 0;
      const double x = x0 + s * bar_w;
      if (v > 0) {
        const double y = std::max(top, y_of(std::max(v, std::pow(10.0, d0))));
        o += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"{}\"><title>{}: {:g}</title></rect>\n",
                         x, y, bar_w - 2, top + plot_h - y, series[s].color, esc(series[s].label), v);
        o += fmt::format("<text transform=\"translate({:.1f},{:.1f}) rotate(-90)\" font-size=\"9\">{:.3g}</text>\n",
                         x + (bar_w - 2) / 2 + 3, y - 3, v);
      } else {  // exactly 0: a marker below the axis
        o += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"{}\"><title>{}: 0</title></circle>\n",
                         x + (bar_w - 2) / 2, top + plot_h + 8, series[s].color, esc(series[s].label));
      }
    }
    const double xl = x0 + series.size() * bar_w / 2;
    o += fmt::format("<text transform=\"translate({:.1f},{:.1f}) rotate(45)\">{}</text>\n", xl, top + plot_h + 22, esc(groups[g]));
  }
  for (size_t s = 0; s < series.size(); ++s) {
    const double y = top + 10 + s * 18;
    o += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"12\" height=\"12\" fill=\"{}\"/>\n", left + plot_w + 20, y, series[s].color);
    o += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\">{}</text>\n", left + plot_w + 38, y + 10, esc(series[s].label));
  }
  o += "</svg>\n";
  return o;
}

}  // namespace akv
