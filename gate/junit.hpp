// The gate's report as JUnit XML (`akv gate --junit FILE`, spec/gate.md GT5), which CI systems read.
#pragma once
#include <string>
#include <vector>

#include "gate/gate.hpp"

namespace akv::gate {

/// A <testsuites> document with one <testsuite name="akv gate: `suite`"> and one <testcase> per
/// check (classname its op, name its id, time its seconds): a failure has a <failure> with the
/// message's first line as its message attribute and the whole message, reproduce string and
/// counterexample files as its text; a skipped check a <skipped message="why"/>. Text and
/// attributes escaped (&, <, >, ", '; control bytes other than tab and newline as U+FFFD).
std::string junit_xml(const std::vector<Check>& checks, const std::string& suite, const std::string& properties_line);

/// `s` escaped for XML text and attributes, as junit_xml does.
std::string xml_escape(const std::string& s);

}  // namespace akv::gate
