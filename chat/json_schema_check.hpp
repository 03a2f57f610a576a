// What of a JSON schema the grammar engine enforces (spec/serving.md SV14): xgrammar 0.2.8 reads a
// subset of JSON Schema and ignores the rest, mostly without a word (`not`, `uniqueItems`, a
// `required` name that `properties` lacks, `minimum` beside `$ref`, an unknown `format`, ...). A
// grammar that ignored a keyword would admit replies the schema forbids; so every keyword is
// checked against what xgrammar's converter consumes, branch by branch, and anything else is
// refused by its JSON path. The grammar is then never wider than the schema; it may be narrower
// (strict mode: an object admits only its listed properties unless `additionalProperties` says
// otherwise, an array only its listed items unless `items` does; a `pattern` matches the whole
// string, as if anchored).
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace akv::chat {

/// Checks that `schema` (JSON Schema draft 2020-12, as OpenAI's structured outputs and tool
/// `parameters` send it; key order kept) uses only what the grammar engine enforces:
///   annotations anywhere: title, description, default, examples, deprecated, readOnly,
///     writeOnly, $comment, $schema; $defs and definitions (schemas $ref may name);
///   $ref ("#" or "#/a/b": a pointer through object keys, no ~ or % escapes, to a schema),
///     const, enum (non-empty), anyOf (non-empty), oneOf (non-empty; options xgrammar proves
///     disjoint), allOf (exactly one schema): each alone, `type` beside const/enum when every
///     value has that type;
///   type (one of the seven names, or a non-empty array of them) with its type's keywords:
///     integer: minimum, maximum, exclusiveMinimum, exclusiveMaximum (whole numbers),
///       multipleOf (a whole number > 0);
///     number: minimum, maximum, exclusiveMinimum, exclusiveMaximum;
///     string: pattern, format (email, date, time, date-time, duration, ipv4, ipv6, hostname,
///       uuid, uri, uri-reference, uri-template, each as xgrammar's regex for it: syntax only,
///       so "2023-02-31" is a date, "10.01.0.1" an ipv4, and label lengths are not counted;
///       xgrammar's json-pointer and relative-json-pointer write invalid JSON), minLength,
///       maxLength (not with pattern or format; not pattern with format);
///     array: items, prefixItems (schema objects), unevaluatedItems (without items), minItems,
///       maxItems;
///     object: properties, required (names `properties` defines), patternProperties,
///       propertyNames, additionalProperties, unevaluatedProperties (without
///       additionalProperties), minProperties, maxProperties;
///   without `type`: object keywords make an object, array keywords an array, nothing else.
/// Patterns (`pattern`, `patternProperties` keys) go through xgrammar's regex converter one by
/// one; an error or a warning there (a lookahead it would drop, an anchor inside) is refused at
/// that keyword, and so is a pattern whose characters xgrammar would not keep escaped inside the
/// JSON string (a repetition bounded above 128; a literal quote or backslash). Every schema
/// must admit a finite value (not a $ref cycle that writes nothing, nor a required property
/// that recurses forever: xgrammar would compile a grammar whose mask empties midway). Nesting
/// deeper than 64 schemas is refused.
///
/// `path` is the schema's JSON path in the request, e.g. "response_format.json_schema.schema".
/// Throws Error(kBadInput) "PATH: problem", PATH the path of the offending keyword, e.g.
/// `response_format.json_schema.schema.properties.x.pattern: lookahead ... is not enforced by the
/// grammar engine`.
void check_json_schema(const nlohmann::ordered_json& schema, const std::string& path);

/// The JSON path of member `key` of the object at `path`: `path.key` for a key of letters,
/// digits, '_', '$' and '-' not starting with a digit; otherwise `path["key"]` (JSON-quoted,
/// cut to 40 bytes).
std::string json_path_member(const std::string& path, const std::string& key);

}  // namespace akv::chat
