// A gate failure's message as a kernel author reads it (spec/gate.md GT5): what failed first,
// then where akv asserted it, never RapidCheck's "file:line:\nRC_FAIL(...)" first.
#pragma once
#include <string>

namespace akv::gate {

/// `rc` (a RapidCheck failure description, possibly behind a "Falsifiable after ..." header)
/// reordered: the property's own sentence on the first line ("assertion failed: EXPR: ..." for
/// an RC_ASSERT), then "at FILE:LINE (MACRO)" with FILE relative to akv's source tree, then the
/// header. Text without RapidCheck's location comes back unchanged.
std::string lead_with_failure(const std::string& rc);

}  // namespace akv::gate
