// Strict option values for every akv subcommand (spec/input.md IN4): empty, negative,
// non-numeric or out-of-range values are exit 2 naming the option, never reinterpreted.
#pragma once
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <cstdint>
#include <string>
#include <vector>

namespace akv::cli {

/// A CLI11 check: the value is a decimal integer in [lo, hi] (digits only: no sign, space,
/// hex or exponent). Its message names the range; CLI11 prefixes the option's name.
CLI::Validator decimal(uint64_t lo, uint64_t hi);

/// A CLI11 check: the value is not empty.
CLI::Validator nonempty();

/// A CLI11 check: the value is one of `names` (the registry that also writes the help).
CLI::Validator one_of(const std::vector<std::string>& names);

/// "a | b | c": the names of a registry, for a help string.
std::string names_help(const std::vector<std::string>& names);

/// A comma-separated list of message indexes ("3,5"). Empty, an empty element, or an element
/// that is not a decimal integer: Error(kBadInput) naming `option` and the value.
std::vector<size_t> index_list(const std::string& option, const std::string& text);

/// Prints a JSON report on stdout: valid JSON whatever bytes its strings carry (invalid
/// UTF-8 is replaced, spec/input.md IN6), written in one piece after the command succeeded.
void print_json(const nlohmann::json& j);

/// Writes `text` to `path` whole: to a temporary file beside it, then renamed into place, so a
/// reader never sees a torn file. Error(kBadInput) naming the path when it cannot be written.
void write_text_file(const std::string& path, const std::string& text);

/// Where main() writes the JSON error object under --json (IN5): stdout (fd 1) unless a command
/// moved its report elsewhere (the gate keeps the real stdout on another fd while a library
/// runs; its child reports to its parent on its own fd and writes none: -1).
int& json_error_fd();

}  // namespace akv::cli
