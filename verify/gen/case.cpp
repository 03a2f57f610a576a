#include "verify/gen/case.hpp"

#include <algorithm>

namespace akv::gen {

const char* role_name(Role r) {
  switch (r) {
    case Role::kSystem: return "system";
    case Role::kUser: return "user";
    case Role::kAssistant: return "assistant";
    case Role::kTool: return "tool";
  }
  return "?";
}

const char* scratch_kind_name(ScratchKind k) { return k == ScratchKind::kNaN ? "nan" : "stale"; }

const char* request_kind_name(RequestKind k) {
  switch (k) {
    case RequestKind::kOne: return "one";
    case RequestKind::kAdjacent: return "adjacent";
    case RequestKind::kNonAdjacent: return "non-adjacent";
    case RequestKind::kFirst: return "first";
    case RequestKind::kLast: return "last";
    case RequestKind::kAll: return "all";
    case RequestKind::kAllButOne: return "all-but-one";
    case RequestKind::kAny: return "any";
  }
  return "?";
}

const char* chunk_kind_name(ChunkKind k) {
  switch (k) {
    case ChunkKind::kOneCall: return "one-call";
    case ChunkKind::kPerSpan: return "per-span";
    case ChunkKind::kRandomCuts: return "random-cuts";
    case ChunkKind::kTokenByToken: return "token-by-token";
  }
  return "?";
}

size_t GenConversation::total_tokens() const {
  size_t n = 0;
  for (const GenSpan& s : spans) n += s.tokens.size();
  return n;
}

std::vector<size_t> GenConversation::nonempty() const {
  std::vector<size_t> out;
  for (size_t i = 0; i < spans.size(); ++i)
    if (!spans[i].tokens.empty()) out.push_back(i);
  return out;
}

std::vector<Token> GenConversation::tokens_without(const std::vector<size_t>& skip) const {
  std::vector<Token> out;
  for (size_t i = 0; i < spans.size(); ++i)
    if (!std::binary_search(skip.begin(), skip.end(), i))
      out.insert(out.end(), spans[i].tokens.begin(), spans[i].tokens.end());
  return out;
}

Chunking make_chunking(ChunkKind kind, const GenConversation& conv, const std::vector<size_t>& cuts) {
  Chunking c;
  c.kind = kind;
  const size_t n = conv.total_tokens();
  if (n == 0) return c;
  switch (kind) {
    case ChunkKind::kOneCall: c.lengths = {n}; break;
    case ChunkKind::kPerSpan:
      for (const GenSpan& s : conv.spans)
        if (!s.tokens.empty()) c.lengths.push_back(s.tokens.size());
      break;
    case ChunkKind::kTokenByToken: c.lengths.assign(n, 1); break;
    case ChunkKind::kRandomCuts: {
      size_t prev = 0;
      for (size_t p : cuts)
        if (p > prev && p < n) {
          c.lengths.push_back(p - prev);
          prev = p;
        }
      c.lengths.push_back(n - prev);
      break;
    }
  }
  return c;
}

}  // namespace akv::gen
