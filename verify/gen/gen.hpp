// RapidCheck generators of the property suite (spec/properties.md). Every generator
// shrinks towards few spans, short spans and small token ids.
#pragma once
#include <rapidcheck.h>

#include <vector>

#include "verify/gen/case.hpp"
#include "verify/gen/profile.hpp"
#include "verify/gen/show.hpp"

namespace akv::gen {

/// A token id in [0, vocab), uniform (the fixture's 288: bytes, specials and reserved ids, one
/// in nine not a byte; a real model's profile passes its vocabulary); shrinks towards 0.
rc::Gen<Token> token(int vocab = 288);

/// A span of `role` with 0..max_len tokens: empty one time in ten, mostly short.
rc::Gen<GenSpan> span(size_t max_len, int vocab = 288);

/// 1..p.max_spans spans (more as RapidCheck's size grows), trimmed to `budget` tokens
/// (spans past the budget are dropped). `min_nonempty` spans hold >= 1 token (redrawn if not).
rc::Gen<GenConversation> conversation(const Profile& p, size_t budget, size_t min_nonempty = 1);

/// The model of a case: tiny mostly, small now and then; seed in [1, p.max_seed].
rc::Gen<ModelChoice> model_choice(const Profile& p);

/// The token budget of a conversation on `m` under `p`.
size_t budget_for(const Profile& p, const ModelChoice& m);

/// A conversation cut from a bundled real one (examples/conversations/*.json, encoded by
/// spec/model.md M5): a window of consecutive messages, each span cut to at most
/// p.max_span_len tokens (keeping its closing <|end|>), the window trimmed to `budget`.
rc::Gen<GenConversation> real_conversation(const Profile& p, size_t budget);

/// An eviction request on `conv` (>= 1 span): one of the shapes of RequestKind, falling
/// back to kOne/kAny where the conversation is too short for the shape.
rc::Gen<EvictRequest> evict_request(const GenConversation& conv);

/// A chunking of `conv`'s tokens of the given kind; kRandomCuts draws its cut points.
rc::Gen<Chunking> chunking(const GenConversation& conv, ChunkKind kind);

/// A permutation of `items`.
rc::Gen<std::vector<size_t>> permutation(std::vector<size_t> items);

}  // namespace akv::gen
