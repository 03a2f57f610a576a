// Readable printouts of generated cases, for RapidCheck counterexamples (rc::showValue
// finds these by argument-dependent lookup).
#pragma once
#include <ostream>
#include <string>
#include <vector>

#include "verify/gen/case.hpp"

namespace akv::gen {

/// Tokens as text: printable bytes as they are, other bytes as \xNN, specials as <|name|>
/// (reference/tokenizer.hpp tok::render), the whole in double quotes.
std::string quote_tokens(const std::vector<Token>& tokens);

void showValue(const GenSpan& s, std::ostream& os);
void showValue(const GenConversation& c, std::ostream& os);
void showValue(const ModelChoice& m, std::ostream& os);
void showValue(const EvictRequest& r, std::ostream& os);
void showValue(const Chunking& c, std::ostream& os);
void showValue(Role r, std::ostream& os);
/// "cpu options: 3 threads, isa avx2, scratch stale after 5 warm-up tokens".
void showValue(const BackendDraw& d, std::ostream& os);
void showValue(const BackendDraws& d, std::ostream& os);

}  // namespace akv::gen
