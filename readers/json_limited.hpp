// JSON of an untrusted model file (a safetensors header, config.json, a shard index), parsed
// with nlohmann-json under two limits checked as the text is read: nesting depth, and no key
// repeated in one object (JSON leaves its meaning open; keeping either value drops the other).
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace akv::model {

/// Parses `text`. Objects and arrays may nest `max_depth` levels (the top value is level 1).
/// Throws Error(kBadModel) `FILE: FIELD: problem` (one line) for invalid JSON (invalid UTF-8
/// included; a NUL byte anywhere, which nlohmann-json would take for the end of the input),
/// a nesting deeper than max_depth, or a repeated key.
nlohmann::json parse_json_limited(std::string_view text, int max_depth, const std::string& file, const std::string& field);

/// "an object", "a string", "a negative integer", ... for messages.
const char* json_kind(const nlohmann::json& j);

/// `s` between single quotes, made printable on one line (at most 80 bytes shown).
std::string quoted_name(std::string_view s);

}  // namespace akv::model
