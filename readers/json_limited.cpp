#include "readers/json_limited.hpp"

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <vector>

#include "reference/strict.hpp"

namespace akv::readers {

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

namespace {

[[noreturn]] void fail(const JsonSource& source, const std::string& what) { throw Error(source.code, source.where + ": " + what); }

std::string over_limit(uintmax_t size, const JsonLimits& limits) {
  return std::to_string(size) + " bytes, more than the limit of " + std::to_string(limits.max_bytes) + " (" + limits.clause + ")";
}

}  // namespace

json parse_json_limited(std::string_view text, const JsonLimits& limits, const JsonSource& source) {
  const bool input = source.code == ErrorCode::kBadInput;
  const std::string clause = std::string(" (") + limits.clause + ")";
  if (text.size() > limits.max_bytes) fail(source, over_limit(text.size(), limits));
  // nlohmann-json ends its input at a NUL byte (for C strings): what follows would be ignored
  // silently. JSON text never holds one (a string escapes it as \u0000).
  if (const size_t nul = text.find('\0'); nul != std::string_view::npos)
    fail(source, input ? "malformed JSON: a NUL byte at offset " + std::to_string(nul) +
                     " (JSON text holds none; write \\u0000 inside a string)"
               : "NUL byte at offset " + std::to_string(nul) + " (not JSON text)");
  std::vector<std::set<std::string>> keys;  // the keys of each open object, innermost last
  const json::parser_callback_t check = [&](int depth, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start:
        // depth is the number of enclosing values: 0 for the top one.
        if (depth >= limits.max_depth) fail(source, "JSON nested deeper than " + std::to_string(limits.max_depth) + " levels" + clause);
        if (event == json::parse_event_t::object_start) keys.emplace_back();
        break;
      case json::parse_event_t::object_end: keys.pop_back(); break;
      case json::parse_event_t::key:
        if (!keys.back().insert(parsed.get<std::string>()).second)
          fail(source, "key " + quoted_name(parsed.get<std::string>()) + " repeated in one object: one of its values would be dropped" +
               clause);
        break;
      default: break;
    }
    return true;
  };
  try {
    return json::parse(text.begin(), text.end(), check);
  } catch (const json::exception& e) {
    if (source.on_syntax_error) source.on_syntax_error(text);
    fail(source, (input ? "malformed JSON: " : "not valid JSON: ") + printable(e.what(), 200));
  }
}

json read_json_file(const std::string& path, const JsonLimits& limits, const JsonSource& source) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) fail(source, "cannot be read: Is a directory");
  if (std::filesystem::is_regular_file(path, ec)) {  // its size is known: refused before it is read
    const uintmax_t size = std::filesystem::file_size(path, ec);
    if (!ec && size > limits.max_bytes) fail(source, over_limit(size, limits));
  }
  std::ifstream f(path, std::ios::binary);
  if (!f.is_open()) fail(source, std::string("cannot be read: ") + std::strerror(errno));
  // A pipe's size is not known: read to one block past the limit, so an endless one is refused.
  std::string text;
  char buf[1 << 16];
  while (f.read(buf, sizeof buf) || f.gcount() > 0) {
    text.append(buf, static_cast<size_t>(f.gcount()));
    if (text.size() > limits.max_bytes) fail(source, over_limit(text.size(), limits));
  }
  if (f.bad()) fail(source, std::string("cannot be read: ") + std::strerror(errno));
  return parse_json_limited(text, limits, source);
}

}  // namespace akv::readers
