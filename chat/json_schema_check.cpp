#include "chat/json_schema_check.hpp"

#include <xgrammar/xgrammar.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "chat/engine_log.hpp"
#include "reference/error.hpp"

namespace akv::chat {

namespace {

using Json = nlohmann::ordered_json;

constexpr int kMaxDepth = 64;

const std::set<std::string> kAnnotations = {"title",    "description", "default",  "examples", "deprecated",
                                            "readOnly", "writeOnly",   "$comment", "$schema"};
const std::set<std::string> kContainers = {"$defs", "definitions"};
const std::set<std::string> kTypes = {"integer", "number", "string", "boolean", "null", "array", "object"};
const std::set<std::string> kFormats = {"email", "date", "time", "date-time", "duration", "ipv4", "ipv6",
                                        "hostname", "uuid", "uri", "uri-reference", "uri-template"};
// Formats xgrammar knows but whose regex writes raw control characters, quotes and encoded
// surrogates into the string (its class [\x00-\x2E] and the range up to U+10FFFF): invalid JSON.
const std::set<std::string> kBrokenFormats = {"json-pointer", "relative-json-pointer"};

// The keywords xgrammar's converter consumes for each type (json_schema_converter.cc, Parse*).
const std::map<std::string, std::set<std::string>> kTypeKeywords = {
    {"integer", {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"}},
    {"number", {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}},
    {"string", {"pattern", "format", "minLength", "maxLength"}},
    {"boolean", {}},
    {"null", {}},
    {"array", {"items", "prefixItems", "unevaluatedItems", "minItems", "maxItems"}},
    {"object",
     {"properties", "required", "patternProperties", "propertyNames", "additionalProperties", "unevaluatedProperties",
      "minProperties", "maxProperties"}},
};
// The keywords that pick a branch of xgrammar's converter on their own, in the order it tries them.
const std::vector<std::string> kAlone = {"$ref", "const", "enum", "anyOf", "oneOf", "allOf"};

bool plain_key(const std::string& k) {
  if (k.empty() || std::isdigit(static_cast<unsigned char>(k[0]))) return false;
  return std::all_of(k.begin(), k.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$' || c == '-';
  });
}

std::string type_name(const Json& v) {
  switch (v.type()) {
    case Json::value_t::null: return "null";
    case Json::value_t::boolean: return "a boolean";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned: return "an integer";
    case Json::value_t::number_float: return "a number";
    case Json::value_t::string: return "a string";
    case Json::value_t::array: return "an array";
    case Json::value_t::object: return "an object";
    default: return "a value";
  }
}

bool has_type(const Json& v, const std::string& t) {
  if (t == "null") return v.is_null();
  if (t == "boolean") return v.is_boolean();
  if (t == "string") return v.is_string();
  if (t == "array") return v.is_array();
  if (t == "object") return v.is_object();
  if (t == "number") return v.is_number();
  if (t == "integer") {
    if (v.is_number_integer()) return true;
    if (!v.is_number_float()) return false;
    const double d = v.get<double>();
    return std::isfinite(d) && d == std::floor(d);
  }
  return false;
}

// JSON-quoted, non-ASCII escaped: a message stays one line of ASCII, whatever the key.
std::string quoted(const std::string& s) { return Json(s).dump(-1, ' ', true, Json::error_handler_t::replace); }

class Checker {
 public:
  Checker(const Json& root, const std::string& path) { schema(root, path, std::string("#"), 0, false); }

  void check_refs() const {
    for (const auto& [ref, path] : refs_) {
      if (!pointers_.count(ref))
        fail(path, "points at " + quoted(ref) + ", which is no schema of this document the grammar engine can name " +
                       "(it resolves refs through object keys only, from the document's root)");
    }
  }

  // Every schema must admit a finite value. xgrammar does not check it: a $ref cycle that
  // writes nothing ({"$ref": "#"}) or a required property that recurses forever compiles to a
  // grammar in which a reply can start a value it can never finish (its mask empties midway).
  // The least fixpoint of "admits a finite value", over the nodes of the walk.
  void check_finite() const {
    std::set<const Json*> finite;
    const auto ok = [&](const Json& x) { return (x.is_boolean() && x.get<bool>()) || finite.count(&x) != 0; };
    const auto admits = [&](const Node& n) {
      const Json& s = *n.schema;
      if (s.is_boolean()) return s.get<bool>();
      if (s.contains("$ref")) return finite.count(pointers_.at(s["$ref"].get<std::string>())) != 0;
      if (s.contains("const") || s.contains("enum")) return true;
      for (const char* k : {"anyOf", "oneOf", "allOf"})
        if (s.contains(k)) return std::any_of(s[k].begin(), s[k].end(), ok);
      for (const auto& t : n.types) {
        if (t == "array") {
          const int64_t least = s.contains("minItems") ? s["minItems"].get<int64_t>() : 0;
          const Json none = Json::array();
          const Json& prefix = s.contains("prefixItems") ? s["prefixItems"] : none;
          bool all = true;
          for (int64_t i = 0; i < least && i < static_cast<int64_t>(prefix.size()); ++i) all = all && ok(prefix[static_cast<size_t>(i)]);
          if (least > static_cast<int64_t>(prefix.size())) {
            const char* more = s.contains("items") ? "items" : "unevaluatedItems";
            all = all && s.contains(more) && ok(s[more]);
          }
          if (all) return true;
        } else if (t == "object") {
          bool all = true;
          for (const auto& r : s.contains("required") ? s["required"] : Json::array())
            all = all && ok(s["properties"][r.get<std::string>()]);
          if (all) return true;
        } else {
          return true;
        }
      }
      return n.types.empty();  // any value
    };
    for (bool grew = true; grew;) {
      grew = false;
      for (const Node& n : nodes_)
        if (!finite.count(n.schema) && admits(n)) grew = finite.insert(n.schema).second || grew;
    }
    for (const Node& n : nodes_)
      if (!finite.count(n.schema))
        fail(n.path, "no finite JSON value satisfies this schema as the grammar engine reads it (a $ref recursion " +
                         std::string("that never reaches a value), so a reply could start a value it can never finish"));
  }

 private:
  [[noreturn]] static void fail(const std::string& path, const std::string& why) {
    throw Error(ErrorCode::kBadInput, path + ": " + why);
  }
  [[noreturn]] static void ignored(const std::string& path, const std::string& why) {
    fail(path, why + "; the grammar engine (xgrammar) would ignore it, so akv refuses it");
  }

  // A count: a non-negative integer literal (2.0 is refused, as xgrammar refuses it), clamped to int64.
  static int64_t non_negative(const Json& v, const std::string& path) {
    if (!v.is_number_integer()) fail(path, "expected a non-negative integer, got " + type_name(v));
    if (v.is_number_unsigned())
      return static_cast<int64_t>(std::min<uint64_t>(v.get<uint64_t>(), std::numeric_limits<int64_t>::max()));
    if (v.get<int64_t>() < 0) fail(path, "expected a non-negative integer, got " + v.dump());
    return v.get<int64_t>();
  }

  // A pattern through xgrammar's own JSON-schema converter, as the schema's compile will meet it:
  // an error or a warning is this keyword's. The characters of a pattern stay inside a JSON
  // string (no raw control character, quote or backslash) only through xgrammar's regex
  // automaton built with json_string=true: a repetition bounded above 128 becomes a sub-rule
  // built without it, and a pattern the automaton cannot take (one that needs a quote or a
  // backslash) falls back to a grammar without it. Either would write invalid JSON, so the
  // probe's grammar must show every regex as json_string=true.
  static void probe(const Json& probe_schema, const std::string& path) {
    // Compiled (the regex automata, and their sub-rules, are built by the compiler) over a
    // vocabulary of the 256 bytes: cheap, and the grammar is the same for every vocabulary.
    static const xgrammar::TokenizerInfo bytes = [] {
      std::vector<std::string> v;
      for (int b = 0; b < 256; ++b) v.emplace_back(1, static_cast<char>(b));
      return xgrammar::TokenizerInfo(v, xgrammar::VocabType::RAW, 256, std::vector<int32_t>{}, false);
    }();
    detail::EngineLog log;
    std::string grammar;
    try {
      xgrammar::GrammarCompiler compiler(bytes, 1, false, -1);
      grammar = compiler.CompileJSONSchema(probe_schema.dump(), true, std::nullopt, std::nullopt, true).GetGrammar().ToString();
    } catch (const Error&) {
      throw;
    } catch (const std::exception& e) {
      fail(path, "the grammar engine refuses it: " + detail::engine_message(e));
    }
    if (!log.warnings().empty()) ignored(path, "the grammar engine warns: " + log.warnings().front());
    const auto count = [&](const std::string& what) {
      size_t n = 0;
      for (size_t at = grammar.find(what); at != std::string::npos; at = grammar.find(what, at + 1)) ++n;
      return n;
    };
    const size_t regexes = count("Regex(");
    if (regexes == 0 || regexes != count(", json_string=true)"))
      fail(path, "the grammar engine cannot keep this pattern's characters escaped inside a JSON string (a " +
                     std::string("repetition bounded above 128, a pattern character outside printable ASCII, or a ") +
                     "match that needs a quote, a backslash or a control character), so it could write invalid JSON");
  }

  void schema(const Json& s, const std::string& path, std::optional<std::string> pointer, int depth,
              bool implicit_string) {
    if (depth > kMaxDepth) fail(path, "schemas nested deeper than " + std::to_string(kMaxDepth));
    if (pointer && pointer->size() > 1 << 12) pointer.reset();
    if (pointer) pointers_.emplace(*pointer, &s);
    if (s.is_boolean()) {
      if (!s.get<bool>()) fail(path, "the schema false admits no value; the grammar engine cannot generate for it");
      nodes_.push_back({&s, path, {}});
      return;
    }
    if (!s.is_object()) fail(path, "expected a schema (an object or a boolean), got " + type_name(s));
    const auto child = [&](const std::string& key) { return json_path_member(path, key); };
    const auto child_pointer = [&](const std::string& a, const std::string* b = nullptr) -> std::optional<std::string> {
      if (!pointer) return std::nullopt;
      if (a.find('/') != std::string::npos || (b && b->find('/') != std::string::npos)) return std::nullopt;
      return *pointer + "/" + a + (b ? "/" + *b : std::string());
    };

    // The branch xgrammar takes (SchemaParser::Parse): the first of kAlone present, else type
    // (or the implicit string of propertyNames), else object or array keywords, else any value.
    std::string branch;
    for (const auto& k : kAlone)
      if (s.contains(k)) {
        branch = k;
        break;
      }
    std::vector<std::string> types;
    if (s.contains("type")) {
      const Json& t = s["type"];
      if (t.is_string()) {
        types.push_back(t.get<std::string>());
      } else if (t.is_array() && !t.empty()) {
        for (const auto& x : t) {
          if (!x.is_string()) fail(child("type"), "expected type names, got " + type_name(x) + " in the array");
          types.push_back(x.get<std::string>());
        }
      } else {
        fail(child("type"), "expected a type name or a non-empty array of them, got " + type_name(t) +
                                (t.is_array() ? " that is empty" : ""));
      }
      for (const auto& n : types)
        if (!kTypes.count(n))
          fail(child("type"), quoted(n) + " is not a JSON Schema type (integer, number, string, boolean, null, array, object)");
    }
    if (branch.empty()) {
      if (!types.empty()) {
        branch = "type";
      } else if (implicit_string) {
        branch = "type";
        types.push_back("string");
      } else if (s.contains("properties") || s.contains("additionalProperties") || s.contains("unevaluatedProperties")) {
        branch = "object";
        types.push_back("object");
      } else if (s.contains("items") || s.contains("prefixItems") || s.contains("unevaluatedItems")) {
        branch = "array";
        types.push_back("array");
      } else {
        branch = "any";
      }
    }

    nodes_.push_back({&s, path, branch == "type" || branch == "object" || branch == "array" ? types : std::vector<std::string>{}});

    // Every keyword is an annotation, a container of named schemas, or consumed by the branch.
    std::set<std::string> consumed;
    if (branch == "type" || branch == "object" || branch == "array") {
      if (s.contains("type")) consumed.insert("type");
      for (const auto& t : types) consumed.insert(kTypeKeywords.at(t).begin(), kTypeKeywords.at(t).end());
    } else if (branch != "any") {
      consumed.insert(branch);
      if ((branch == "const" || branch == "enum") && s.contains("type")) consumed.insert("type");
    }
    for (const auto& [key, value] : s.items()) {
      (void)value;
      if (kAnnotations.count(key) || kContainers.count(key) || consumed.count(key)) continue;
      const std::string where = child(key);
      bool typed = false;
      for (const auto& [t, kws] : kTypeKeywords) typed = typed || kws.count(key);
      if (key == "type") ignored(where, "`type` beside `" + branch + "` is not read (xgrammar takes `" + branch + "` alone)");
      if (branch != "type" && branch != "object" && branch != "array" && branch != "any")
        ignored(where, "`" + key + "` beside `" + branch + "` is not read (xgrammar takes `" + branch +
                           "` alone; put the keyword inside each option or the referenced schema)");
      if (typed && branch == "any") ignored(where, "`" + key + "` in a schema without `type` is not read");
      if (typed) {
        std::string listed;
        for (const auto& t : types) listed += (listed.empty() ? "" : ", ") + quoted(t);
        ignored(where, "`" + key + "` does not apply to type " + listed);
      }
      ignored(where, "`" + key + "` is not a keyword the grammar engine enforces");
    }

    // Containers: schemas by name, which $ref may point at.
    for (const auto& c : kContainers) {
      if (!s.contains(c)) continue;
      if (!s[c].is_object()) fail(child(c), "expected an object of schemas, got " + type_name(s[c]));
      for (const auto& [name, sub] : s[c].items()) schema(sub, json_path_member(child(c), name), child_pointer(c, &name), depth + 1, false);
    }

    if (branch == "$ref") {
      const Json& r = s["$ref"];
      if (!r.is_string()) fail(child("$ref"), "expected a string, got " + type_name(r));
      const std::string ref = r.get<std::string>();
      if (ref != "#") {
        if (ref.rfind("#/", 0) != 0)
          fail(child("$ref"), quoted(ref) + " is not a pointer into this schema (\"#\" or \"#/...\"); the grammar engine resolves no other reference");
        if (ref.find_first_of("~%") != std::string::npos)
          fail(child("$ref"), quoted(ref) + " has an escape (~ or %), which the grammar engine does not decode");
        if (ref.back() == '/' || ref.find("//") != std::string::npos)
          fail(child("$ref"), quoted(ref) + " has an empty reference token");
      }
      refs_.emplace_back(ref, child("$ref"));
      return;
    }
    if (branch == "const" || branch == "enum") {
      const Json& v = s[branch];
      if (branch == "enum" && (!v.is_array() || v.empty()))
        fail(child("enum"), "expected a non-empty array, got " + type_name(v) + (v.is_array() ? " that is empty" : ""));
      if (s.contains("const") && s.contains("enum")) ignored(child("enum"), "`enum` beside `const` is not read");
      if (!types.empty()) {
        const auto check = [&](const Json& x, const std::string& where) {
          if (std::none_of(types.begin(), types.end(), [&](const std::string& t) { return has_type(x, t); }))
            ignored(child("type"), "`type` beside `" + branch + "` is not read, and " + where + " (" + type_name(x) +
                                      ") does not have that type");
        };
        if (branch == "const") {
          check(v, "the value");
        } else {
          for (size_t i = 0; i < v.size(); ++i) check(v[i], "enum[" + std::to_string(i) + "]");
        }
      }
      return;
    }
    if (branch == "anyOf" || branch == "oneOf" || branch == "allOf") {
      const Json& v = s[branch];
      if (!v.is_array() || v.empty())
        fail(child(branch), "expected a non-empty array of schemas, got " + type_name(v) + (v.is_array() ? " that is empty" : ""));
      if (branch == "allOf" && v.size() != 1)
        ignored(child(branch), "`allOf` with " + std::to_string(v.size()) + " schemas is not enforced (one only)");
      for (size_t i = 0; i < v.size(); ++i)
        schema(v[i], child(branch) + "[" + std::to_string(i) + "]", std::nullopt, depth + 1, false);  // no pointer through arrays
      return;
    }
    if (branch == "any") return;

    const auto has = [&](const std::string& t) { return std::find(types.begin(), types.end(), t) != types.end(); };
    // Numbers.
    for (const char* k : {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}) {
      if (!s.contains(k)) continue;
      const Json& v = s[k];
      if (!v.is_number()) fail(child(k), "expected a number, got " + type_name(v));
      if (has("integer") && !has_type(v, "integer"))
        fail(child(k), "the grammar engine takes the bounds of an integer as whole numbers only, got " + v.dump());
      if (v.is_number_float() && !std::isfinite(v.get<double>())) fail(child(k), "expected a finite number");
    }
    if (s.contains("multipleOf")) {
      const Json& v = s["multipleOf"];
      if (!v.is_number() || v.get<double>() <= 0) fail(child("multipleOf"), "expected a number greater than 0");
      if (has("number")) ignored(child("multipleOf"), "`multipleOf` on type \"number\" is not enforced");
      if (!has_type(v, "integer")) ignored(child("multipleOf"), "`multipleOf` on an integer is enforced only as a whole number, got " + v.dump());
    }
    // Strings.
    if (s.contains("pattern") && !s["pattern"].is_string()) fail(child("pattern"), "expected a string, got " + type_name(s["pattern"]));
    if (s.contains("format")) {
      const Json& f = s["format"];
      if (!f.is_string()) fail(child("format"), "expected a string, got " + type_name(f));
      if (kBrokenFormats.count(f.get<std::string>()))
        fail(child("format"), "format " + quoted(f.get<std::string>()) +
                                  ": the grammar engine's regex for it writes raw control characters and quotes into the string (invalid JSON)");
      if (!kFormats.count(f.get<std::string>()))
        ignored(child("format"), "format " + quoted(f.get<std::string>()) + " is not one the grammar engine knows (" +
                                     "email, date, time, date-time, duration, ipv4, ipv6, hostname, uuid, uri, uri-reference, " +
                                     "uri-template)");
      if (s.contains("pattern")) ignored(child("pattern"), "`pattern` beside `format` is not read (format wins)");
    }
    std::map<std::string, int64_t> count;  // the counts given: minLength, maxItems, ...
    for (const char* k : {"minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties"})
      if (s.contains(k)) count[k] = non_negative(s[k], child(k));
    const auto min_over_max = [&](const std::string& lo, const std::string& hi, const std::string& what) {
      if (count.count(lo) && count.count(hi) && count[lo] > count[hi])
        fail(child(lo), "is greater than " + hi + ": no " + what);
    };
    for (const char* k : {"minLength", "maxLength"}) {
      if (!s.contains(k)) continue;
      if (std::string(k) == "minLength" && count[k] > std::numeric_limits<int32_t>::max())
        fail(child(k), "a minimum length beyond 2^31-1 cannot be generated");
      if (s.contains("pattern") || s.contains("format"))
        ignored(child(k), std::string("`") + k + "` beside `" + (s.contains("pattern") ? "pattern" : "format") + "` is not read");
    }
    min_over_max("minLength", "maxLength", "string has such a length");
    if (s.contains("pattern") && !s.contains("format"))
      probe(Json{{"type", "string"}, {"pattern", s["pattern"]}}, child("pattern"));

    // Arrays.
    if (s.contains("items")) {
      const Json& v = s["items"];
      if (v.is_array()) fail(child("items"), "an array of schemas (draft 4 tuples) is not read: use prefixItems");
      if (!v.is_boolean()) schema(v, child("items"), child_pointer("items"), depth + 1, false);
      if (s.contains("unevaluatedItems")) ignored(child("unevaluatedItems"), "`unevaluatedItems` beside `items` is not read");
    }
    if (s.contains("prefixItems")) {
      const Json& v = s["prefixItems"];
      if (!v.is_array()) fail(child("prefixItems"), "expected an array of schemas, got " + type_name(v));
      for (size_t i = 0; i < v.size(); ++i) {
        const std::string where = child("prefixItems") + "[" + std::to_string(i) + "]";
        if (!v[i].is_object()) fail(where, "the grammar engine takes only objects here (write {} for any value), got " + type_name(v[i]));
        schema(v[i], where, std::nullopt, depth + 1, false);
      }
    }
    if (s.contains("unevaluatedItems") && !s.contains("items") && !s["unevaluatedItems"].is_boolean())
      schema(s["unevaluatedItems"], child("unevaluatedItems"), child_pointer("unevaluatedItems"), depth + 1, false);
    if (count.count("minItems") && count["minItems"] > std::numeric_limits<int32_t>::max())
      fail(child("minItems"), "a minimum beyond 2^31-1 cannot be generated");
    const int64_t prefix_items = s.contains("prefixItems") ? static_cast<int64_t>(s["prefixItems"].size()) : 0;
    if (count.count("minItems") && count["minItems"] > prefix_items && !s.contains("items") && !s.contains("unevaluatedItems"))
      fail(child("minItems"), "asks for " + std::to_string(count["minItems"]) + " items, but without `items` the grammar " +
                                  "engine (strict mode) admits none beyond prefixItems: say what an item is");
    min_over_max("minItems", "maxItems", "array has such a length");

    // Objects.
    std::set<std::string> names;
    if (s.contains("properties")) {
      const Json& v = s["properties"];
      if (!v.is_object()) fail(child("properties"), "expected an object of schemas, got " + type_name(v));
      for (const auto& [name, sub] : v.items()) {
        names.insert(name);
        schema(sub, json_path_member(child("properties"), name), child_pointer("properties", &name), depth + 1, false);
      }
    }
    if (s.contains("required")) {
      const Json& v = s["required"];
      if (!v.is_array()) fail(child("required"), "expected an array of property names, got " + type_name(v));
      std::set<std::string> seen;
      for (size_t i = 0; i < v.size(); ++i) {
        const std::string where = child("required") + "[" + std::to_string(i) + "]";
        if (!v[i].is_string()) fail(where, "expected a property name, got " + type_name(v[i]));
        const std::string n = v[i].get<std::string>();
        if (!seen.insert(n).second) fail(where, quoted(n) + " is listed twice");
        if (!names.count(n))
          ignored(where, quoted(n) + " is required but `properties` does not define it, so the grammar engine would never write it");
      }
    }
    if (s.contains("patternProperties")) {
      const Json& v = s["patternProperties"];
      if (!v.is_object()) fail(child("patternProperties"), "expected an object of schemas, got " + type_name(v));
      for (const auto& [re, sub] : v.items()) {
        const std::string where = json_path_member(child("patternProperties"), re);
        Json pp = Json::object(), probe_schema = Json::object();
        pp[re] = Json::object();
        probe_schema["type"] = "object";
        probe_schema["patternProperties"] = pp;
        probe(probe_schema, where);
        schema(sub, where, child_pointer("patternProperties", &re), depth + 1, false);
      }
    }
    if (s.contains("propertyNames")) {
      const Json& v = s["propertyNames"];
      if (!v.is_object()) fail(child("propertyNames"), "expected a schema object, got " + type_name(v));
      if (v.contains("type") && v["type"] != "string")
        fail(child("propertyNames") + ".type", "property names are strings; expected \"string\"");
      schema(v, child("propertyNames"), child_pointer("propertyNames"), depth + 1, true);
    }
    for (const char* k : {"additionalProperties", "unevaluatedProperties"}) {
      if (!s.contains(k)) continue;
      if (std::string(k) == "unevaluatedProperties" && s.contains("additionalProperties"))
        ignored(child(k), "`unevaluatedProperties` beside `additionalProperties` is not read");
      if (!s[k].is_boolean()) schema(s[k], child(k), child_pointer(k), depth + 1, false);
    }
    for (const char* k : {"minProperties", "maxProperties"})
      if (count.count(k) && count[k] > std::numeric_limits<int32_t>::max()) fail(child(k), "beyond 2^31-1");
    min_over_max("minProperties", "maxProperties", "object has so many properties");
  }

  struct Node {
    const Json* schema;
    std::string path;
    std::vector<std::string> types;  // the types its branch makes; empty: any value
  };
  std::map<std::string, const Json*> pointers_;           // "#/..." of each schema reached through object keys
  std::vector<std::pair<std::string, std::string>> refs_;  // ($ref, its path)
  std::vector<Node> nodes_;                                // every schema of the walk, in its order
};

}  // namespace

std::string json_path_member(const std::string& path, const std::string& key) {
  if (plain_key(key)) return path + "." + key;
  std::string q = quoted(key);
  if (q.size() > 40) q = q.substr(0, 36) + "...\"";
  return path + "[" + q + "]";
}

void check_json_schema(const Json& schema, const std::string& path) {
  Checker c(schema, path);
  c.check_refs();
  c.check_finite();
}

}  // namespace akv::chat
