// What every property does with a generated case: models by choice, sessions built from a
// conversation, raw chunked runs, and the bitwise comparison of two sessions' state.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "reference/backend.hpp"
#include "reference/session.hpp"
#include "verify/check/run.hpp"
#include "verify/gen/case.hpp"

namespace akv::prop {

/// The model of `m`, built once per process per (config, seed).
std::shared_ptr<const Model> model_for(const gen::ModelChoice& m);

/// A fresh backend `name` on `model` (verify/backends.hpp), or from the factory of the
/// running property's Context when it has one; Error(kUnknownBackend) if unknown,
/// Error(kBackendUnavailable) if this build or machine lacks it.
std::unique_ptr<Backend> backend_for(const std::string& name, std::shared_ptr<const Model> model);

/// Sets the factory backend_for uses (null: by name); the harness sets it per property run.
void set_backend_factory(std::function<std::unique_ptr<Backend>(std::shared_ptr<const Model>)> f);

/// Appends every non-empty span of `conv` whose index is not in `skip` (sorted), one
/// append per span, span id = index.
void build(Session& s, const gen::GenConversation& conv, const std::vector<size_t>& skip = {});

/// The non-empty spans among `request`, ascending: the ids an eviction hands the session.
std::vector<SpanId> live_ids(const gen::GenConversation& conv, const std::vector<size_t>& request);

/// "" when a and b hold bitwise the same observable cache state (spec/state.md S1, S2):
/// cache size, every layer's K and V bytes, token and span id of every entry, the span
/// table, and the next-token logits (both empty, or memcmp-equal). Otherwise one line
/// naming the first difference and its max|delta|.
std::string state_diff(const Session& a, const Session& b);

/// The harness's one cache comparison and chunked run (verify/check/run.hpp).
using check::cache_diff;
using check::run_chunked;

/// Bytes of entries [0, n) of every layer, K then V: the E3 snapshot.
std::vector<float> prefix_bytes(const KVCache& c, size_t n);

}  // namespace akv::prop
