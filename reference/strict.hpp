// Strict parsing of numbers and names given on the command line or in the environment
// (spec/input.md IN4): nothing is silently reinterpreted.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace akv {

/// `s` as a decimal integer in [lo, hi]: one or more ASCII digits and nothing else (no sign,
/// no space, no "0x", no exponent). Empty, negative, non-numeric or out of range: nullopt.
std::optional<uint64_t> parse_decimal(std::string_view s, uint64_t lo, uint64_t hi);

/// The environment variable `name` as a decimal integer in [lo, hi]; nullopt when unset.
/// Set but empty or not such an integer: Error(kBadInput) naming the variable and its value.
std::optional<uint64_t> env_decimal(const char* name, uint64_t lo, uint64_t hi);

/// The environment variable `name` when set; set but empty is Error(kBadInput) naming it.
std::optional<std::string> env_nonempty(const char* name);

/// `s` made printable on one line for an error message: bytes outside printable ASCII become
/// \xNN, and anything past `max` bytes becomes "..." (the message names the value, it does
/// not reproduce it).
std::string printable(std::string_view s, size_t max = 80);

}  // namespace akv
