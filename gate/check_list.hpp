// The gate's checks as a table, generated from the registry (gate::check_ids, describe_check),
// for `akv gate --list` and docs/gate.md (a test keeps the two equal; spec/gate.md GT5).
#pragma once
#include <string>

namespace akv::gate {

/// One line per check: "ID  KIND  SUMMARY", the columns aligned.
std::string check_list_text();

/// The same as a Markdown table ("| Check | Kind | What it asserts |"), one row per check,
/// then a blank line and the exit codes' table; what docs/gate.md carries between
/// "<!-- akv gate --list --markdown -->" and "<!-- end -->".
std::string check_list_markdown();

/// The exit codes of `akv gate`: "0 ...\n1 ...\n2 ...\n", one line each.
std::string exit_codes_text();

}  // namespace akv::gate
