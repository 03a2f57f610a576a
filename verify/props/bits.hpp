// Bitwise equality of float vectors as a RapidCheck-friendly predicate.
#pragma once
#include <cstring>
#include <vector>

namespace akv::prop {

/// True when a and b have the same length and the same bytes (memcmp): NaNs with the same
/// payload are equal, +0 and -0 are not.
inline bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

}  // namespace akv::prop
