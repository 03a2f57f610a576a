#include "verify/check/op_shapes.hpp"

#include <rapidcheck.h>

#include <algorithm>

#include "optimized/cpu/kernels.hpp"

namespace akv::check {

std::vector<int> row_boundaries() {
  std::vector<int> out{1};
  for (int p = 2; p <= kPrefillChunk; p *= 2)
    for (int m : {p - 1, p, p + 1})
      if (m > out.back()) out.push_back(m);
  return out;
}

std::vector<int> width_boundaries() {
  std::vector<int> out = boundaries({cpu::kLanes, cpu::kMatmulBlock, cpu::kKeyBlock}, {1, 2, 4});
  out.insert(out.end(), cpu::kAttentionCheckHeadDims.begin(), cpu::kAttentionCheckHeadDims.end());
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

int gen_rows_m(int min_m) {
  const int pick = *rc::gen::inRange(0, 6);  // 0-2 small, 3-4 at a boundary, 5 anywhere to a chunk
  if (pick < 3) return *rc::gen::inRange(min_m, 33);
  if (pick < 5) {
    std::vector<int> b = row_boundaries();
    std::erase_if(b, [&](int m) { return m < min_m; });
    return *rc::gen::elementOf(b);
  }
  return *rc::gen::inRange(std::max(min_m, 33), kPrefillChunk + 1);
}

int gen_width(int max_width) {
  const int pick = *rc::gen::inRange(0, 7);  // 0-3 small, 4 a boundary, 5 to 700, 6 a layer's
  auto capped = [&](std::vector<int> v) {
    std::erase_if(v, [&](int w) { return w > max_width; });
    return v.empty() ? *rc::gen::inRange(1, max_width + 1) : *rc::gen::elementOf(v);
  };
  if (pick < 4) return *rc::gen::inRange(1, std::min(129, max_width) + 1);
  if (pick == 4) return capped(width_boundaries());
  if (pick == 5) return *rc::gen::inRange(1, std::min(700, max_width) + 1);
  return capped(layer_widths());
}

int cap_rows(int M, long long width, long long budget) {
  return static_cast<int>(std::max<long long>(1, std::min<long long>(M, budget / std::max<long long>(width, 1))));
}

}  // namespace akv::check
