#include "readers/json_limited.hpp"

#include <set>
#include <vector>

#include "reference/error.hpp"
#include "reference/strict.hpp"

namespace akv::model {

using json = nlohmann::json;

std::string quoted_name(std::string_view s) { return "'" + printable(s, 80) + "'"; }

const char* json_kind(const json& j) {
  switch (j.type()) {
    case json::value_t::null: return "null";
    case json::value_t::object: return "an object";
    case json::value_t::array: return "an array";
    case json::value_t::string: return "a string";
    case json::value_t::boolean: return "a boolean";
    case json::value_t::number_integer: return "a negative integer";
    case json::value_t::number_unsigned: return "an integer";
    case json::value_t::number_float: return "a non-integer number";
    default: return "another value";
  }
}

json parse_json_limited(std::string_view text, int max_depth, const std::string& file, const std::string& field) {
  const auto fail = [&](const std::string& what) -> void { throw Error(ErrorCode::kBadModel, file + ": " + field + ": " + what); };
  // nlohmann-json ends its input at a NUL byte (for C strings): what follows would be ignored.
  // JSON text never holds one (a string escapes it as \u0000), so it is an error here.
  if (const size_t nul = text.find('\0'); nul != std::string_view::npos)
    fail("NUL byte at offset " + std::to_string(nul) + " (not JSON text)");
  std::vector<std::set<std::string>> keys;  // the keys of each open object, innermost last
  const json::parser_callback_t check = [&](int depth, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start:
        // depth is the number of enclosing values: 0 for the top one.
        if (depth >= max_depth) fail("JSON nested deeper than " + std::to_string(max_depth) + " levels");
        if (event == json::parse_event_t::object_start) keys.emplace_back();
        break;
      case json::parse_event_t::object_end: keys.pop_back(); break;
      case json::parse_event_t::key:
        if (!keys.back().insert(parsed.get<std::string>()).second)
          fail("key " + quoted_name(parsed.get<std::string>()) + " repeated in one object");
        break;
      default: break;
    }
    return true;
  };
  try {
    return json::parse(text.begin(), text.end(), check);
  } catch (const json::exception& e) {
    fail("not valid JSON: " + printable(e.what(), 160));
  }
  return nullptr;  // unreachable
}

}  // namespace akv::model
