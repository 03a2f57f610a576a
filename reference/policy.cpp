#include "reference/policy.hpp"

#include <algorithm>

#include "reference/error.hpp"

namespace akv {

const char* policy_name(EvictPolicy p) {
  switch (p) {
    case EvictPolicy::kKeep: return "keep";
    case EvictPolicy::kMask: return "mask";
    case EvictPolicy::kKShift: return "kshift";
    case EvictPolicy::kExact: return "exact";
  }
  return "?";
}

std::vector<EvictPolicy> all_policies() {
  return {EvictPolicy::kKeep, EvictPolicy::kMask, EvictPolicy::kKShift, EvictPolicy::kExact};
}

std::vector<std::string> policy_names() {
  std::vector<std::string> n;
  for (EvictPolicy p : all_policies()) n.push_back(policy_name(p));
  return n;
}

EvictPolicy parse_policy(std::string_view name) {
  for (EvictPolicy p : all_policies())
    if (name == policy_name(p)) return p;
  throw Error(ErrorCode::kBadInput, "unknown policy '" + std::string(name) + "' (keep, mask, kshift, exact)");
}

std::vector<EvictPolicy> parse_policies(std::string_view list) {
  std::vector<EvictPolicy> out;
  size_t i = 0;
  while (true) {
    const size_t j = std::min(list.find(',', i), list.size());
    const std::string_view name = list.substr(i, j - i);
    if (name.empty()) throw Error(ErrorCode::kBadInput, "--policies: empty policy name in '" + std::string(list) + "'");
    const EvictPolicy p = parse_policy(name);
    if (std::find(out.begin(), out.end(), p) != out.end())
      throw Error(ErrorCode::kBadInput, "--policies: '" + std::string(name) + "' named twice");
    out.push_back(p);
    if (j == list.size()) break;
    i = j + 1;
  }
  return out;
}

}  // namespace akv
