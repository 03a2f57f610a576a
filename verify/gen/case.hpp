// The generated cases of the property suite (spec/properties.md): conversations of spans,
// eviction requests, chunkings and model choices. Plain data; generators are in gen.hpp.
#pragma once
#include "reference/kv_types.hpp"
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "reference/config.hpp"

namespace akv::gen {

/// A chat role; the span's tokens need not start with the role's token (they are drawn
/// over the whole vocabulary), the role only names the message in printouts and files.
enum class Role { kSystem, kUser, kAssistant, kTool };

/// "system", "user", "assistant", "tool".
const char* role_name(Role r);

/// One message: its tokens, any ids in [0, vocab), possibly none. An empty span is never
/// appended (a session span holds >= 1 token, spec/operations.md O2); see
/// spec/properties.md "Empty spans".
struct GenSpan {
  Role role = Role::kUser;
  std::vector<Token> tokens;
};

/// A conversation: span i has span id i in every session built from it.
struct GenConversation {
  std::vector<GenSpan> spans;

  size_t total_tokens() const;
  /// Indexes of the spans with at least one token, ascending.
  std::vector<size_t> nonempty() const;
  /// Tokens of the spans whose index is not in `skip` (sorted), in order.
  std::vector<Token> tokens_without(const std::vector<size_t>& skip) const;
};

/// Which model a case runs on: a named config (spec/model.md M2) or a drawn shape as its
/// spec string ("synthetic:hidden=...", M12), and a weight seed (M3).
struct ModelChoice {
  std::string config = "tiny";
  uint64_t seed = 1;
  /// The cache type of the case's sessions (spec/state.md S5): f32 unless a property of the
  /// cache types drew another (model_choice_typed).
  KvType kv = KvType::kF32;
};

/// How a drawn backend's scratch starts: filled with NaN before every call, or never poisoned
/// and holding what a warm-up call on other tokens left there (spec/properties.md).
enum class ScratchKind { kNaN, kStale };

/// "nan", "stale".
const char* scratch_kind_name(ScratchKind k);

/// What a backend lets a case draw: a thread count and an ISA (the cpu backend), or nothing.
struct BackendKnobs {
  bool threads = false;            // threads in [Profile::min_threads, max_threads]
  std::vector<std::string> isas;   // ISA names this machine runs; empty: no ISA option
};

/// The options of one backend of a case: threads (0 when the backend has none), ISA ("" when
/// none), and its scratch; kStale runs `warmup` (>= 1 token) on another cache first.
struct BackendDraw {
  int threads = 0;
  std::string isa;
  ScratchKind scratch = ScratchKind::kNaN;
  std::vector<Token> warmup;
};

/// The options of the backends a case makes, in the order it makes them (cycling when it
/// makes more: verify/props/fixture.hpp backend_for).
struct BackendDraws {
  std::vector<BackendDraw> each;
};

/// The shapes of eviction request the generators draw.
enum class RequestKind { kOne, kAdjacent, kNonAdjacent, kFirst, kLast, kAll, kAllButOne, kAny };

/// "one", "adjacent", ...
const char* request_kind_name(RequestKind k);

/// Span indexes to evict at once, ascending and distinct; may name empty spans.
struct EvictRequest {
  RequestKind kind = RequestKind::kOne;
  std::vector<size_t> spans;
};

/// Ways to cut the same token sequence into append calls (I1).
enum class ChunkKind { kOneCall, kPerSpan, kRandomCuts, kTokenByToken };

/// "one-call", "per-span", "random-cuts", "token-by-token".
const char* chunk_kind_name(ChunkKind k);

/// A chunking of n tokens: the lengths of consecutive calls, each >= 1, summing to n.
struct Chunking {
  ChunkKind kind = ChunkKind::kOneCall;
  std::vector<size_t> lengths;
};

/// The lengths of `kind` for `conv` (kRandomCuts needs explicit cut points: use `cuts`,
/// ascending positions in (0, n)).
Chunking make_chunking(ChunkKind kind, const GenConversation& conv, const std::vector<size_t>& cuts = {});

}  // namespace akv::gen
