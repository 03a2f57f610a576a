// The one strict reader of untrusted JSON: every JSON text akv takes from outside (a model
// file's header, config or tokenizer, a conversation or request, an audit log line, a witness
// or shard file) is parsed here with nlohmann-json under limits checked as the text is read:
// its size, its nesting depth, no key repeated in one object (JSON leaves its meaning open;
// keeping either value drops the other), no NUL byte.
#pragma once
#include <cstddef>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "reference/error.hpp"

namespace akv::readers {

/// The limits one kind of JSON text is read under, as its spec clause states them.
struct JsonLimits {
  size_t max_bytes;    // the text's length, at most
  int max_depth;       // arrays and objects nest at most this many levels (the top value is level 1)
  const char* clause;  // the clause that states them ("spec/input.md IN3"), quoted in messages
};

/// Who reads the text: the error code it throws and the lead of its messages.
struct JsonSource {
  ErrorCode code;     // kBadModel for a model file; kBadInput for a conversation, request, log or result file
  std::string where;  // "FILE: FIELD", "conversation", "body": every message starts `WHERE: `
  /// Called with the text when it is not valid JSON, before the reader throws: may throw a
  /// more helpful error of its own (a conversation file that is a JSONL log). Optional.
  std::function<void(std::string_view)> on_syntax_error = {};
};

/// Parses `text` under `limits`. Throws Error(source.code), one line `WHERE: problem`, for a
/// text over max_bytes, a NUL byte anywhere (nlohmann-json would take it for the end of the
/// input), a nesting deeper than max_depth (checked as each array or object opens, before any
/// recursive code sees the value), a repeated key, or invalid JSON (invalid UTF-8 included).
/// Input errors (kBadInput) say `malformed JSON`, the words of spec/input.md IN3 that clients
/// match; model-file errors say `not valid JSON` / `NUL byte`, as spec/safetensors.md H1.
nlohmann::json parse_json_limited(std::string_view text, const JsonLimits& limits, const JsonSource& source);

/// Reads the file at `path` and parses it as parse_json_limited does; its size is checked
/// before it is read. Throws Error(source.code) `WHERE: cannot be read: REASON` when it cannot
/// be read (missing, a directory, unreadable).
nlohmann::json read_json_file(const std::string& path, const JsonLimits& limits, const JsonSource& source);

/// "an object", "a string", "a negative integer", ... for messages.
const char* json_kind(const nlohmann::json& j);

/// `s` between single quotes, made printable on one line (at most 80 bytes shown).
std::string quoted_name(std::string_view s);

}  // namespace akv::readers
