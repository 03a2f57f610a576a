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

/// The model of a case: tiny mostly, small now and then (p.small_per_mille), a drawn shape
/// p.shape_per_mille of the time; seed in [1, p.max_seed].
rc::Gen<ModelChoice> model_choice(const Profile& p);

/// A model choice with a cache type drawn from `types` (spec/state.md S5): f16 on model_choice's
/// models; q8_0, which needs a head_dim multiple of 32 (check_kv_type), on a synthetic shape
/// with head_dim 32, 64 or 128 (the cpu kernels' paths).
rc::Gen<ModelChoice> model_choice_typed(const Profile& p, const std::vector<KvType>& types);

/// A small synthetic shape (spec/model.md M12) as its spec string: hidden 4-64, layers 1-3,
/// kv_heads 1-3, heads = kv_heads * (1-3), head_dim 2-20 even, ffn 4-96, vocab 288-320; most
/// have reduction lengths (hidden, q_dim, ffn) that are not multiples of 16. Shrinks towards
/// the smallest.
rc::Gen<std::string> synthetic_shape();
/// A synthetic shape as synthetic_shape() whose head_dim is drawn from `head_dims`.
rc::Gen<std::string> synthetic_shape(std::vector<int> head_dims);

/// The token budget of a conversation on `m` under `p`.
size_t budget_for(const Profile& p, const ModelChoice& m);

/// The cache bound of the stateful property on `m` under `p`.
size_t state_budget_for(const Profile& p, const ModelChoice& m);

/// One backend's options under `k`: threads in [p.min_threads, p.max_threads] when the
/// backend has them, an ISA of k.isas, NaN or stale scratch (half each; a stale one's warm-up
/// is 1-16 tokens of [0, p.vocab)). Shrinks towards 1 thread, the first ISA, NaN.
rc::Gen<BackendDraw> backend_draw(const Profile& p, const BackendKnobs& k);

/// Four backend draws: enough for every backend a property makes (more cycle).
rc::Gen<BackendDraws> backend_draws(const Profile& p, const BackendKnobs& k);

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
