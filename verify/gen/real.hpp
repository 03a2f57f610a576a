// The bundled real conversations (examples/conversations/*.json) as generator input.
#pragma once
#include <string>
#include <vector>

#include "verify/gen/case.hpp"

namespace akv::gen {

/// Directory of the bundled conversations: $AKV_EXAMPLES if set, else the source tree's
/// examples/conversations.
std::string examples_dir();

/// Every *.json conversation in examples_dir(), sorted by file name, one span per message
/// encoded by spec/model.md M5; loaded once. Empty when the directory holds none.
const std::vector<GenConversation>& real_conversations();

}  // namespace akv::gen
