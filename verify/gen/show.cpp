#include "verify/gen/show.hpp"

#include <cstdio>

#include "reference/tokenizer.hpp"

namespace akv::gen {

std::string quote_tokens(const std::vector<Token>& tokens) {
  std::string s = "\"";
  for (Token t : tokens) {
    if (t >= 32 && t < 127 && t != '"' && t != '\\') {
      s.push_back(static_cast<char>(t));
    } else if (t >= 0 && t < 256) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(t));
      s += buf;
    } else {
      s += tok::render({t});
    }
  }
  return s + "\"";
}

void showValue(Role r, std::ostream& os) { os << role_name(r); }

void showValue(const GenSpan& s, std::ostream& os) {
  os << role_name(s.role) << " (" << s.tokens.size() << " tokens) " << quote_tokens(s.tokens);
  if (!s.tokens.empty() && s.tokens.size() <= 24) {
    os << " ids [";
    for (size_t i = 0; i < s.tokens.size(); ++i) os << (i ? ", " : "") << s.tokens[i];
    os << "]";
  }
}

void showValue(const GenConversation& c, std::ostream& os) {
  os << "conversation of " << c.spans.size() << " spans, " << c.total_tokens() << " tokens:";
  for (size_t i = 0; i < c.spans.size(); ++i) {
    os << "\n    span " << i << ": ";
    showValue(c.spans[i], os);
  }
}

void showValue(const ModelChoice& m, std::ostream& os) {
  os << "model " << m.config << ", weight seed " << m.seed;
  if (m.kv != KvType::kF32) os << ", cache " << kv_type_name(m.kv);
}

void showValue(const BackendDraw& d, std::ostream& os) {
  if (d.threads > 0) os << d.threads << (d.threads == 1 ? " thread, " : " threads, ");
  if (!d.isa.empty()) os << "isa " << d.isa << ", ";
  os << "scratch " << scratch_kind_name(d.scratch);
  if (d.scratch == ScratchKind::kStale) os << " after a warm-up call on " << quote_tokens(d.warmup);
}

void showValue(const BackendDraws& d, std::ostream& os) {
  os << "backend options, in the order the case makes its backends:";
  for (size_t i = 0; i < d.each.size(); ++i) {
    os << "\n    backend " << i << ": ";
    showValue(d.each[i], os);
  }
}

void showValue(const EvictRequest& r, std::ostream& os) {
  os << "evict (" << request_kind_name(r.kind) << ") spans {";
  for (size_t i = 0; i < r.spans.size(); ++i) os << (i ? ", " : "") << r.spans[i];
  os << "}";
}

void showValue(const Chunking& c, std::ostream& os) {
  os << "chunking " << chunk_kind_name(c.kind) << " into " << c.lengths.size() << " calls [";
  const size_t shown = std::min<size_t>(c.lengths.size(), 32);
  for (size_t i = 0; i < shown; ++i) os << (i ? ", " : "") << c.lengths[i];
  if (shown < c.lengths.size()) os << ", ...";
  os << "]";
}

}  // namespace akv::gen
