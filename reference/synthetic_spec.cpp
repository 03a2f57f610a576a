#include "reference/synthetic_spec.hpp"

#include <algorithm>
#include <cstdint>
#include <iterator>

#include "reference/error.hpp"
#include "reference/strict.hpp"

namespace akv {

namespace {
struct Field {
  const char* name;
  int Config::*member;
  uint64_t lo, hi;
  const char* why;  // what the range protects
};
// vocab >= 288: the fixture's byte tokens and specials (M5) must be ids of the model.
constexpr Field kFields[] = {
    {"hidden", &Config::hidden, 1, 8192, ""},
    {"layers", &Config::n_layers, 1, 64, ""},
    {"heads", &Config::n_heads, 1, 256, ""},
    {"kv_heads", &Config::n_kv_heads, 1, 256, ""},
    {"head_dim", &Config::head_dim, 2, 512, ""},
    {"ffn", &Config::ffn, 1, 32768, ""},
    {"vocab", &Config::vocab, 288, 65536, " (the 256 byte tokens and 32 specials of spec/model.md M5 are ids)"},
};
constexpr uint64_t kMaxWeights = uint64_t{1} << 28;

[[noreturn]] void fail(const std::string& what) {
  throw Error(ErrorCode::kBadInput, "synthetic model spec: " + what + " (spec/model.md M12)");
}
}  // namespace

bool is_synthetic_spec(const std::string& s) { return s.rfind(kSyntheticPrefix, 0) == 0; }

Config synthetic_config(const std::string& spec) {
  if (!is_synthetic_spec(spec)) fail("'" + printable(spec, 40) + "' does not start with '" + kSyntheticPrefix + "'");
  Config c = config_by_name("tiny");  // the fixed fields of every synthetic config (M2)
  bool seen[std::size(kFields)] = {};
  const std::string body = spec.substr(std::string(kSyntheticPrefix).size());
  size_t at = 0;
  while (at <= body.size()) {
    const size_t comma = std::min(body.find(',', at), body.size());
    const std::string item = body.substr(at, comma - at);
    const size_t eq = item.find('=');
    if (eq == std::string::npos) fail("'" + printable(item, 40) + "' is not name=value");
    const std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    size_t i = 0;
    while (i < std::size(kFields) && key != kFields[i].name) ++i;
    if (i == std::size(kFields)) {
      std::string names;
      for (const Field& f : kFields) names += (names.empty() ? "" : ", ") + std::string(f.name);
      fail("unknown field '" + printable(key, 40) + "' (fields: " + names + ")");
    }
    const Field& f = kFields[i];
    if (seen[i]) fail("field '" + key + "' given twice");
    seen[i] = true;
    const auto v = parse_decimal(value, f.lo, f.hi);
    if (!v)
      fail(key + "=" + printable(value, 40) + ": expected a decimal in [" + std::to_string(f.lo) + ", " + std::to_string(f.hi) +
           "]" + f.why);
    c.*f.member = static_cast<int>(*v);
    at = comma + 1;
  }
  for (size_t i = 0; i < std::size(kFields); ++i)
    if (!seen[i]) fail("field '" + std::string(kFields[i].name) + "' missing");
  if (c.n_heads % c.n_kv_heads != 0)
    fail("kv_heads=" + std::to_string(c.n_kv_heads) + " does not divide heads=" + std::to_string(c.n_heads) + " (GQA groups)");
  if (c.head_dim % 2 != 0) fail("head_dim=" + std::to_string(c.head_dim) + " is odd (RoPE rotates pairs)");
  const uint64_t h = static_cast<uint64_t>(c.hidden), q = static_cast<uint64_t>(c.q_dim()), kv = static_cast<uint64_t>(c.kv_dim());
  const uint64_t per_layer = 2 * h + q * h + 2 * kv * h + h * q + 3 * static_cast<uint64_t>(c.ffn) * h;
  const uint64_t weights = 2 * static_cast<uint64_t>(c.vocab) * h + h + static_cast<uint64_t>(c.n_layers) * per_layer;
  if (weights > kMaxWeights)
    fail("the shape has " + std::to_string(weights) + " weights, more than 2^28 (1 GiB of float32)");
  c.name = synthetic_spec(c);
  return c;
}

std::string synthetic_spec(const Config& c) {
  std::string s = kSyntheticPrefix;
  for (size_t i = 0; i < std::size(kFields); ++i)
    s += (i ? "," : "") + std::string(kFields[i].name) + "=" + std::to_string(c.*kFields[i].member);
  return s;
}

}  // namespace akv
