#include "verify/gen/profile.hpp"

#include "reference/error.hpp"

namespace akv::gen {

Profile ci_profile() {
  Profile p;
  p.name = "ci";
  p.max_spans = 40;
  p.max_span_len = 300;
  p.max_total = 640;
  p.small_max_total = 24;
  p.small_per_mille = 40;
  p.max_seed = 1000;
  p.max_commands = 24;
  p.state_max_total = 256;
  p.shape_per_mille = 250;
  p.shape_max_total = 96;
  return p;
}

Profile real_profile() {
  Profile p;
  p.name = "real";
  p.model = "smollm2";
  p.vocab = 49152;
  p.max_spans = 8;
  p.max_span_len = 48;
  p.max_total = 160;
  p.max_commands = 8;
  p.state_max_total = 160;
  return p;
}

Profile long_profile() {
  Profile p;
  p.name = "long";
  p.max_spans = 40;
  p.max_span_len = 2048;
  p.max_total = 16384;
  p.small_max_total = 1024;
  p.small_per_mille = 100;
  p.max_seed = 1u << 30;
  p.max_commands = 60;
  p.state_max_total = 16384;
  p.fill_per_mille = 250;  // a quarter of the cases end exactly at the budget: the full context
  p.shape_per_mille = 250;
  p.shape_max_total = 2048;
  return p;
}

Profile profile_by_name(const std::string& name) {
  if (name == "ci") return ci_profile();
  if (name == "long") return long_profile();
  if (name == "real") return real_profile();
  throw Error(ErrorCode::kBadInput, "unknown profile '" + name + "' (expected ci, long or real)");
}

}  // namespace akv::gen
