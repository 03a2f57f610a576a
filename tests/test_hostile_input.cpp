// Hostile inputs (spec/input.md IN8): the bundled conversations, mutated the ways real exports
// and attackers break them, through the `akv witness` binary. Whatever the bytes: exit 0, 1 or
// 2 within a time limit, never a crash or a sanitizer report, and exit 2 leaves stdout empty.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <nlohmann/json.hpp>

#include "cli_support.hpp"
#include "support.hpp"

using namespace akv;
using nlohmann::json;

namespace {

// A bundled conversation cut to its first few messages (the witness stays fast), with a
// "poisoned" list that is valid before mutation.
json seed_conversation(size_t which) {
  const auto files = test::bundled_conversations();
  json j = json::parse(test::slurp(test::example(files[which % files.size()])));
  json& ms = j["messages"];
  const size_t keep = std::min<size_t>(ms.size(), 5);
  ms.erase(ms.begin() + static_cast<long>(keep), ms.end());
  json poisoned = json::array();
  for (const auto& p : j.value("poisoned", json::array()))
    if (p.get<size_t>() < keep) poisoned.push_back(p);
  if (poisoned.empty()) poisoned.push_back(keep - 1);
  j["poisoned"] = poisoned;
  return j;
}

// `depth` nested arrays or objects around a 0.
std::string nested(size_t depth, bool arrays) {
  std::string s;
  for (size_t i = 0; i < depth; ++i) s += arrays ? "[" : "{\"k\":";
  s += "0";
  return s + std::string(depth, arrays ? ']' : '}');
}

// A value of another type, or a hostile one.
json hostile_value(int kind) {
  switch (kind % 12) {
    case 0: return nullptr;
    case 1: return 7;
    case 2: return -1;
    case 3: return 1e308;
    case 4: return json::array();
    case 5: return json::object();
    case 6: return true;
    case 7: return "";
    case 8: return std::string("a\0b", 3);
    case 9: return json::array({json::object()});
    case 10: return 18446744073709551615ULL;
    default: return "robot";
  }
}

// Every path to a value inside `j` (object keys and array indexes), depth-first.
void paths(const json& j, const json::json_pointer& at, std::vector<json::json_pointer>& out) {
  out.push_back(at);
  if (j.is_object())
    for (const auto& [k, v] : j.items()) paths(v, at / k, out);
  else if (j.is_array())
    for (size_t i = 0; i < j.size(); ++i) paths(j[i], at / i, out);
}

// Whether operator[] with a key works on v (an object, or null, which it makes one): a retype
// (op 2) may have made a message a number, where it would throw inside the test, not akv.
bool keyable(const json& v) { return v.is_object() || v.is_null(); }

// One structural mutation of the DOM: drop, duplicate or retype a field, wrong roles, empty
// arrays, out-of-range indexes.
void mutate_dom(json& j) {
  std::vector<json::json_pointer> ps;
  paths(j, json::json_pointer(), ps);
  const auto& p = ps[*rc::gen::inRange<size_t>(0, ps.size())];
  const int op = *rc::gen::inRange(0, 8);
  // Ops 3-7 edit top-level fields: an earlier retype may have made the document a scalar or
  // an array, where operator[] with a key throws inside the test (not akv).
  if (op >= 3 && !j.is_object()) return;
  if (op == 0 && !p.empty()) {  // drop
    json& parent = j[p.parent_pointer()];
    if (parent.is_object()) parent.erase(p.back());
    else if (parent.is_array() && !parent.empty()) parent.erase(parent.begin() + static_cast<long>(std::stoul(p.back())));
  } else if (op == 1 && !p.empty()) {  // duplicate (a message, a part, a call) or copy a field
    json& parent = j[p.parent_pointer()];
    if (parent.is_array()) parent.push_back(j[p]);
    else if (parent.is_object()) parent[p.back() + "_copy"] = j[p];
  } else if (op == 2) {  // retype
    j[p] = hostile_value(*rc::gen::arbitrary<int>());
  } else if (op == 3) {  // wrong role
    const char* roles[] = {"robot", "", "SYSTEM", "developer", "function", "tool", "assistant", "user\n"};
    const size_t m = *rc::gen::inRange<size_t>(0, std::max<size_t>(1, j["messages"].size()));
    if (j["messages"].is_array() && m < j["messages"].size() && keyable(j["messages"][m]))
      j["messages"][m]["role"] = roles[*rc::gen::inRange(0, 8)];
  } else if (op == 4) {  // empty arrays
    const char* keys[] = {"messages", "poisoned"};
    j[keys[*rc::gen::inRange(0, 2)]] = json::array();
  } else if (op == 5) {  // out-of-range or negative indexes
    const long n = static_cast<long>(j["messages"].size());
    j["poisoned"] = json::array({*rc::gen::element(n, n + 100, -1L, 0L, 1L)});
  } else if (op == 6) {  // raw tokens, some outside the vocabulary
    if (j["messages"].is_array() && !j["messages"].empty())
      j["messages"][0] = {{"role", "user"}, {"tokens", {1, *rc::gen::element(287, 288, 100000, -3)}}};
  } else {  // a field a model would see but akv cannot represent
    if (j["messages"].is_array() && !j["messages"].empty() && keyable(j["messages"][0]))
      j["messages"][0]["content"] = json::array({{{"type", "image_url"}, {"image_url", {{"url", "x"}}}}});
  }
}

// One byte-level mutation: deep nesting, invalid UTF-8, NUL bytes, huge numbers, truncation.
void mutate_text(std::string& t) {
  const size_t at = *rc::gen::inRange<size_t>(0, t.size() + 1);
  switch (*rc::gen::inRange(0, 6)) {
    case 0: {  // deep nesting in place of the first "content" value
      const size_t c = t.find("\"content\":");
      if (c != std::string::npos)
        t.insert(c + 10, nested(*rc::gen::element<size_t>(10, 255, 300, 70000), *rc::gen::arbitrary<bool>()) + ", \"x\":");
      break;
    }
    case 1: t.insert(at, *rc::gen::element<std::string>("\xff", "\xc3", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xc0\xaf")); break;
    case 2: t.insert(at, std::string(1, '\0')); break;
    case 3: {  // a huge number in place of a poisoned index
      const size_t p = t.find("\"poisoned\":");
      if (p != std::string::npos)
        t.insert(p + 11, *rc::gen::element<std::string>("[1e999],\"y\":", "[99999999999999999999999999],\"y\":",
                                                          "[-0.0],\"y\":", "[1E400],\"y\":"));
      break;
    }
    case 4: t.resize(at); break;
    default: t.insert(at, *rc::gen::element<std::string>("\"", "{", "]", ",", "\\u0000", "\\ud800")); break;
  }
}

}  // namespace

RC_GTEST_PROP(IN8_HostileInputs, WitnessExitsZeroOneOrTwoNeverCrashes, ()) {
  json j = seed_conversation(*rc::gen::inRange<size_t>(0, 64));
  const int dom_mutations = *rc::gen::inRange(0, 3);
  for (int i = 0; i < dom_mutations; ++i) mutate_dom(j);
  std::string text = j.dump(1, ' ', false, json::error_handler_t::replace);
  if (*rc::gen::arbitrary<bool>()) mutate_text(text);
  const std::string path = test::temp_bytes("hostile.json", text);
  std::vector<std::string> args = {"witness", path, "--model", "tiny", "--json"};
  if (*rc::gen::inRange(0, 4) == 0) {
    args.push_back("--evict");
    args.push_back(*rc::gen::element<std::string>("0", "1,2", "99", "0,0", "", "-1", "4"));
  }
  const test::CliRun r = test::run_akv(args, "", 60);
  RC_LOG() << "exit " << r.code << ", stderr: " << r.err.substr(0, 300);
  RC_ASSERT(r.code == 0 || r.code == 1 || r.code == 2);  // 124/137: hung; >= 128: a signal
  RC_ASSERT(r.err.find("Sanitizer") == std::string::npos);
  RC_ASSERT(r.err.find("runtime error") == std::string::npos);
  if (r.code == 2) {
    RC_ASSERT(test::empty_or_json_error(r.out));  // no partial output: at most the JSON error (IN5)
    RC_ASSERT(std::count(r.err.begin(), r.err.end(), '\n') == 1);  // one line
  } else {
    RC_ASSERT(json::accept(r.out));  // valid JSON whatever the bytes (IN6)
  }
  RC_TAG(r.code);
}
