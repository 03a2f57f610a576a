// Test support for the grammar engine (spec/serving.md SV14): greedy decoding over seeded random
// logits under a grammar's mask, and a JSON Schema validator for the keywords the tests' schemas
// use, written here independently of xgrammar (it refuses a keyword it does not know, so it
// never passes a schema it did not read).
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "chat/grammar.hpp"
#include "reference/chat_encoder.hpp"

namespace akv::test_grammar {

using Json = nlohmann::ordered_json;

inline uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/// A uniform float in [0, 1) from (seed, step, id).
inline float uniform(uint64_t seed, size_t step, size_t id) {
  const uint64_t h = splitmix64(seed ^ splitmix64(step * 0x100000001b3ull + id));
  return static_cast<float>(h >> 40) * (1.0f / 16777216.0f);
}

/// How the random logits lean: closers (tokens whose bytes hold one of `closers`) gain
/// `closer_per_step` per step, so a reply ends in a bounded number of steps; the stop token
/// gains `stop_bonus` (taken as soon as the grammar allows it); tokens whose bytes are all
/// whitespace gain `whitespace_bonus`.
struct Lean {
  std::string closers = "\"}]";
  float closer_per_step = 1.0f / 192;
  float stop_bonus = 4.0f;
  float whitespace_bonus = 0.0f;
};

struct Decode {
  std::vector<Token> tokens;                  // accepted, the stop token left out
  std::string text;                           // their bytes
  bool stopped = false;                       // the stop token was drawn
  std::vector<std::vector<uint32_t>> masks;   // the mask before each draw
  std::string failure;                        // why the loop broke early, or ""
};

/// Greedy decoding under `m`'s mask over random logits (uniform(seed, step, id) plus `lean`),
/// for at most `budget` tokens, from whatever `m` has accepted. Checks each step: the mask
/// allows no control id (except the stop token), allows the stop token iff can_end(), and
/// accept() takes the drawn id.
inline Decode greedy_decode(chat::GrammarMatcher& m, const ChatEncoder& enc, uint64_t seed, size_t budget,
                            const Lean& lean = {}) {
  Decode d;
  const int n = enc.vocab_size();
  const Token stop = enc.end_of_turn();
  std::vector<uint8_t> kind(static_cast<size_t>(n), 0);  // 1 closer, 2 whitespace
  for (Token id = 0; id < n; ++id) {
    if (enc.is_control(id)) continue;
    const std::string b = enc.bytes({id});
    if (b.find_first_of(lean.closers) != std::string::npos) kind[static_cast<size_t>(id)] = 1;
    else if (!b.empty() && b.find_first_not_of(" \t\r\n") == std::string::npos) kind[static_cast<size_t>(id)] = 2;
  }
  std::vector<float> logits(static_cast<size_t>(n));
  std::vector<uint32_t> mask;
  for (size_t step = 0; step < budget; ++step) {
    m.fill_mask(mask);
    d.masks.push_back(mask);
    if (chat::mask_allows(mask, stop) != m.can_end()) {
      d.failure = "step " + std::to_string(step) + ": the stop bit disagrees with can_end()";
      return d;
    }
    for (Token id = 0; id < n; ++id)
      if (id != stop && enc.is_control(id) && chat::mask_allows(mask, id)) {
        d.failure = "step " + std::to_string(step) + ": control id " + std::to_string(id) + " allowed";
        return d;
      }
    for (Token id = 0; id < n; ++id) {
      const auto i = static_cast<size_t>(id);
      float x = uniform(seed, step, i);
      if (kind[i] == 1) x += lean.closer_per_step * static_cast<float>(step);
      if (kind[i] == 2) x += lean.whitespace_bonus;
      if (id == stop) x += lean.stop_bonus;
      logits[i] = x;
    }
    chat::apply_mask(mask, logits.data(), logits.size());
    Token pick = -1;
    float best = -std::numeric_limits<float>::infinity();
    for (Token id = 0; id < n; ++id)
      if (logits[static_cast<size_t>(id)] > best) best = logits[static_cast<size_t>(id)], pick = id;
    if (pick < 0) {
      d.failure = "step " + std::to_string(step) + ": the mask allows no token";
      return d;
    }
    if (!m.accept(pick)) {
      d.failure = "step " + std::to_string(step) + ": accept refused the drawn id " + std::to_string(pick);
      return d;
    }
    if (pick == stop) {
      d.stopped = true;
      return d;
    }
    d.tokens.push_back(pick);
    d.text += enc.bytes({pick});
  }
  d.failure = "no stop within " + std::to_string(budget) + " tokens";
  return d;
}

// UTF-8 to code points, for std::wregex (wchar_t is 32 bits here): a pattern counts characters.
inline std::wstring wide(const std::string& s) {
  std::wstring out;
  for (size_t i = 0; i < s.size();) {
    const auto b = static_cast<unsigned char>(s[i]);
    const int n = b < 0x80 ? 1 : b < 0xe0 ? 2 : b < 0xf0 ? 3 : 4;
    uint32_t c = n == 1 ? b : b & (0x7f >> n);
    for (int k = 1; k < n && i + k < s.size(); ++k) c = (c << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3f);
    out.push_back(static_cast<wchar_t>(c));
    i += n;
  }
  return out;
}

inline bool search(const std::string& text, const std::string& pattern) {
  return std::regex_search(wide(text), std::wregex(wide(pattern), std::regex::ECMAScript));
}

inline size_t code_points(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xc0) != 0x80;
  return n;
}

inline bool is_integer(const Json& v) {
  if (v.is_number_integer()) return true;
  return v.is_number_float() && std::isfinite(v.get<double>()) && v.get<double>() == std::floor(v.get<double>());
}

inline bool has_type(const Json& v, const std::string& t) {
  if (t == "null") return v.is_null();
  if (t == "boolean") return v.is_boolean();
  if (t == "string") return v.is_string();
  if (t == "array") return v.is_array();
  if (t == "object") return v.is_object();
  if (t == "number") return v.is_number();
  if (t == "integer") return is_integer(v);
  return false;
}

/// The first way `v` breaks `s` (JSON Schema, the keywords below), as "PATH: why"; "" if none.
/// `root` resolves "#/$defs/NAME" and "#". An unknown keyword is itself a violation.
inline std::string violation(const Json& v, const Json& s, const Json& root, const std::string& path = "$") {
  if (s.is_boolean()) return s.get<bool>() ? "" : path + ": schema false";
  static const std::set<std::string> known = {
      "type", "properties", "required", "additionalProperties", "items", "prefixItems", "minItems", "maxItems",
      "enum", "const", "anyOf", "oneOf", "allOf", "$ref", "$defs", "minimum", "maximum", "exclusiveMinimum",
      "exclusiveMaximum", "multipleOf", "minLength", "maxLength", "pattern", "format", "minProperties",
      "maxProperties", "patternProperties", "propertyNames", "title", "description", "default"};
  for (const auto& [k, x] : s.items()) {
    (void)x;
    if (!known.count(k)) return path + ": the test's validator does not know `" + k + "`";
  }
  if (s.contains("$ref")) {
    const std::string ref = s["$ref"].get<std::string>();
    if (ref == "#") return violation(v, root, root, path);
    const std::string prefix = "#/$defs/";
    if (ref.rfind(prefix, 0) != 0) return path + ": the test's validator resolves #/$defs/NAME only";
    return violation(v, root["$defs"][ref.substr(prefix.size())], root, path);
  }
  if (s.contains("const") && v != s["const"]) return path + ": not the const " + s["const"].dump();
  if (s.contains("enum")) {
    bool found = false;
    for (const auto& e : s["enum"]) found = found || e == v;
    if (!found) return path + ": not in the enum";
  }
  if (s.contains("type")) {
    bool ok = false;
    if (s["type"].is_string()) ok = has_type(v, s["type"].get<std::string>());
    for (const auto& t : s["type"].is_array() ? s["type"] : Json::array()) ok = ok || has_type(v, t.get<std::string>());
    if (!ok) return path + ": " + v.dump() + " is not of type " + s["type"].dump();
  }
  for (const char* k : {"anyOf", "oneOf", "allOf"}) {
    if (!s.contains(k)) continue;
    size_t good = 0;
    for (const auto& o : s[k]) good += violation(v, o, root, path).empty();
    const std::string kw = k;
    if (kw == "anyOf" && good == 0) return path + ": matches no anyOf option";
    if (kw == "oneOf" && good != 1) return path + ": matches " + std::to_string(good) + " oneOf options";
    if (kw == "allOf" && good != s[k].size()) return path + ": breaks an allOf schema";
  }
  if (v.is_number()) {
    const double x = v.get<double>();
    if (s.contains("minimum") && x < s["minimum"].get<double>()) return path + ": below minimum";
    if (s.contains("maximum") && x > s["maximum"].get<double>()) return path + ": above maximum";
    if (s.contains("exclusiveMinimum") && x <= s["exclusiveMinimum"].get<double>()) return path + ": not above exclusiveMinimum";
    if (s.contains("exclusiveMaximum") && x >= s["exclusiveMaximum"].get<double>()) return path + ": not below exclusiveMaximum";
    if (s.contains("multipleOf")) {
      if (!v.is_number_integer()) return path + ": multipleOf checked on integers only here";
      if (v.get<int64_t>() % s["multipleOf"].get<int64_t>() != 0) return path + ": not a multiple of " + s["multipleOf"].dump();
    }
  }
  if (v.is_string()) {
    const std::string& t = v.get_ref<const std::string&>();
    if (s.contains("minLength") && code_points(t) < s["minLength"].get<size_t>()) return path + ": shorter than minLength";
    if (s.contains("maxLength") && code_points(t) > s["maxLength"].get<size_t>()) return path + ": longer than maxLength";
    // ECMAScript patterns over code points; unanchored, as JSON Schema reads them.
    if (s.contains("pattern") && !search(t, s["pattern"].get<std::string>())) return path + ": does not match the pattern";
    if (s.contains("format")) {
      static const std::map<std::string, std::string> formats = {
          {"date", R"(^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])$)"},
          {"uuid", R"(^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$)"},
          // As the engine enforces it (json_schema_check.hpp): a byte may have leading zeros.
          {"ipv4", R"(^((25[0-5]|2[0-4]\d|[01]?\d?\d)\.){3}(25[0-5]|2[0-4]\d|[01]?\d?\d)$)"},
          {"time", R"(^([01]\d|2[0-3]):[0-5]\d:([0-5]\d|60)(\.\d+)?(Z|[+-]([01]\d|2[0-3]):[0-5]\d)$)"},
          {"email", R"(^[^@\s]+@[A-Za-z0-9]([-A-Za-z0-9]*[A-Za-z0-9])?(\.[A-Za-z0-9][-A-Za-z0-9]*[A-Za-z0-9])*$)"},
          {"hostname", R"(^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$)"}};
      const auto f = formats.find(s["format"].get<std::string>());
      if (f == formats.end()) return path + ": the test's validator does not know format " + s["format"].dump();
      if (!search(t, f->second)) return path + ": not a " + f->first;
    }
  }
  if (v.is_array()) {
    if (s.contains("minItems") && v.size() < s["minItems"].get<size_t>()) return path + ": fewer than minItems";
    if (s.contains("maxItems") && v.size() > s["maxItems"].get<size_t>()) return path + ": more than maxItems";
    const size_t prefix = s.contains("prefixItems") ? s["prefixItems"].size() : 0;
    for (size_t i = 0; i < v.size(); ++i) {
      const std::string p = path + "[" + std::to_string(i) + "]";
      std::string why;
      if (i < prefix) why = violation(v[i], s["prefixItems"][i], root, p);
      else if (s.contains("items")) why = violation(v[i], s["items"], root, p);
      if (!why.empty()) return why;
    }
  }
  if (v.is_object()) {
    if (s.contains("minProperties") && v.size() < s["minProperties"].get<size_t>()) return path + ": fewer than minProperties";
    if (s.contains("maxProperties") && v.size() > s["maxProperties"].get<size_t>()) return path + ": more than maxProperties";
    for (const auto& r : s.contains("required") ? s["required"] : Json::array())
      if (!v.contains(r.get<std::string>())) return path + ": lacks required " + r.dump();
    for (const auto& [k, x] : v.items()) {
      const std::string p = path + "." + k;
      bool matched = false;
      if (s.contains("properties") && s["properties"].contains(k)) {
        matched = true;
        if (auto why = violation(x, s["properties"][k], root, p); !why.empty()) return why;
      }
      static const Json none = Json::object();
      const Json& patterns = s.contains("patternProperties") ? s["patternProperties"] : none;
      for (const auto& [re, sub] : patterns.items())
        if (search(k, re)) {
          matched = true;
          if (auto why = violation(x, sub, root, p); !why.empty()) return why;
        }
      if (s.contains("propertyNames"))
        if (auto why = violation(Json(k), s["propertyNames"], root, p + " (name)"); !why.empty()) return why;
      if (!matched && s.contains("additionalProperties"))
        if (auto why = violation(x, s["additionalProperties"], root, p); !why.empty()) return why;
    }
  }
  return "";
}

/// Draws JSON schemas over the keywords the grammar's checker admits (seeded; `depth` levels of
/// arrays, objects and anyOf), with the string patterns and formats the validator reads.
class SchemaDraw {
 public:
  explicit SchemaDraw(uint64_t seed) : state_(seed) {}
  Json schema(int depth) {
    switch (pick(depth > 0 ? 11 : 7)) {
      case 0: return string_schema();
      case 1: return integer_schema();
      case 2: return number_schema();
      case 3: return Json::parse(pick(2) ? R"({"type": "boolean"})" : R"({"type": "null"})");
      case 4: return enum_schema();
      case 5: return Json{{"const", value(1)}};
      case 6: {
        Json s = pick(2) ? string_schema() : integer_schema();
        s["type"] = Json::array({s["type"], "null"});
        return s;
      }
      case 7: case 8: return array_schema(depth);
      case 9: return object_schema(depth);
      default: return Json{{"anyOf", Json::array({schema(depth - 1), schema(depth - 1)})}};
    }
  }

 private:
  uint64_t next() { return state_ = splitmix64(state_); }
  size_t pick(size_t n) { return static_cast<size_t>(next() % n); }
  int64_t between(int64_t lo, int64_t hi) { return lo + static_cast<int64_t>(next() % static_cast<uint64_t>(hi - lo + 1)); }

  Json string_schema() {
    Json s = {{"type", "string"}};
    switch (pick(4)) {
      case 0: break;
      case 1: {
        const int64_t lo = between(0, 4);
        if (pick(2)) s["minLength"] = lo;
        if (pick(2)) s["maxLength"] = lo + between(0, 6);
        break;
      }
      case 2: {
        static const char* patterns[] = {"^[a-z]+$", "^[A-Z][a-z]{1,5}$", "^\\d{3}-\\d{2}$", "^(yes|no|maybe)$", "^x*y?z+$", "^[^a-z]{2,4}$"};
        s["pattern"] = patterns[pick(6)];
        break;
      }
      default: {
        static const char* formats[] = {"date", "uuid", "ipv4", "time", "hostname"};
        s["format"] = formats[pick(5)];
      }
    }
    return s;
  }
  Json integer_schema() {
    Json s = {{"type", "integer"}};
    const int64_t lo = between(-50, 50);
    if (pick(2)) s[pick(2) ? "minimum" : "exclusiveMinimum"] = lo;
    if (pick(2)) s[pick(2) ? "maximum" : "exclusiveMaximum"] = lo + between(2, 300);
    if (pick(3) == 0 && s.contains("minimum") + s.contains("exclusiveMinimum") && s.contains("maximum") + s.contains("exclusiveMaximum"))
      s["multipleOf"] = between(1, 4);
    return s;
  }
  Json number_schema() {
    Json s = {{"type", "number"}};
    const double lo = static_cast<double>(between(-400, 400)) / 8;
    if (pick(2)) s[pick(2) ? "minimum" : "exclusiveMinimum"] = lo;
    if (pick(2)) s[pick(2) ? "maximum" : "exclusiveMaximum"] = lo + static_cast<double>(between(1, 800)) / 8;
    return s;
  }
  Json value(int depth) {
    switch (pick(depth > 0 ? 6 : 4)) {
      case 0: return between(-1000, 1000);
      case 1: return std::string("v") + std::to_string(pick(100));
      case 2: return pick(2) == 1;
      case 3: return nullptr;
      case 4: return Json::array({value(depth - 1), value(depth - 1)});
      default: return Json{{"k", value(depth - 1)}};
    }
  }
  Json enum_schema() {
    Json values = Json::array();
    for (size_t i = 0, n = 1 + pick(4); i < n; ++i) values.push_back(value(1));
    return Json{{"enum", values}};
  }
  Json array_schema(int depth) {
    Json s = {{"type", "array"}};
    if (pick(3) == 0) {
      s["prefixItems"] = Json::array({schema(depth - 1)});
      if (pick(2)) s["prefixItems"].push_back(schema(depth - 1));
    }
    if (pick(4) != 0) s["items"] = schema(depth - 1);
    const int64_t lo = between(0, 2);
    if (pick(2)) s["minItems"] = lo;
    if (pick(2)) s["maxItems"] = lo + between(0, 3);
    return s;
  }
  Json object_schema(int depth) {
    static const char* names[] = {"id", "name", "x", "y", "tags", "kind"};
    Json s = {{"type", "object"}}, props = Json::object(), required = Json::array();
    for (size_t i = 0, n = pick(4); i < n; ++i) {
      const std::string k = names[pick(6)];
      if (props.contains(k)) continue;
      props[k] = schema(depth - 1);
      if (pick(2)) required.push_back(k);
    }
    s["properties"] = props;
    if (!required.empty()) s["required"] = required;
    switch (pick(4)) {
      case 0: s["additionalProperties"] = false; break;
      case 1: s["additionalProperties"] = schema(0); break;
      case 2: s["patternProperties"] = Json{{"^p_[a-z]{1,3}$", schema(0)}}; break;
      default: break;
    }
    return s;
  }

  uint64_t state_;
};

/// Parses `text` as JSON (nlohmann: strict about UTF-8, control characters and surrogates);
/// the error text if it does not parse.
inline std::string parse_json(const std::string& text, Json& out) {
  try {
    out = Json::parse(text);
    return "";
  } catch (const std::exception& e) {
    return e.what();
  }
}

}  // namespace akv::test_grammar
