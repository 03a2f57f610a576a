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
#include "runtime/backends.hpp"
#include "verify/gen/case.hpp"

namespace akv::prop {

/// The model of `m`, built once per process per (config, seed).
std::shared_ptr<const Model> model_for(const gen::ModelChoice& m);

/// Makes a backend from a model and its options (a Context's factory: a broken backend).
using BackendFactory = std::function<std::unique_ptr<Backend>(std::shared_ptr<const Model>, const BackendOptions&)>;

/// A fresh backend `name` on `model` (runtime/backends.hpp), or from the factory of the
/// running property's Context when it has one, made with the next of the case's backend draws
/// (use_backend_draws; cycling): its threads and ISA, then its scratch: NaN before every call,
/// or unpoisoned after a warm-up call on the draw's tokens (those below the model's vocab) on
/// another cache. Without draws: default options and scratch. Error(kUnknownBackend) if
/// unknown, Error(kBackendUnavailable) if this build or machine lacks it.
std::unique_ptr<Backend> backend_for(const std::string& name, std::shared_ptr<const Model> model);

/// backend_for with `threads` in place of the draw's (recorded so in used_backend_draws) when
/// the backend has threads (backend_knobs) and threads > 0; as backend_for otherwise.
std::unique_ptr<Backend> backend_at_threads(const std::string& name, std::shared_ptr<const Model> model, int threads);

/// Sets the factory backend_for uses (null: by name); the harness sets it per property run.
void set_backend_factory(BackendFactory f);

/// The backend draws of the running case (empty: none), restarting the count of those used.
void use_backend_draws(gen::BackendDraws d);

/// The draws backend_for has used in the running case, in order (at most one cycle).
std::vector<gen::BackendDraw> used_backend_draws();

/// What `backend` lets a case draw: threads and this machine's ISAs for "cpu", nothing else.
gen::BackendKnobs backend_knobs(const std::string& backend);

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

/// Bytes of entries [0, n) of every layer, K then V, as stored: the E3 snapshot.
std::vector<unsigned char> prefix_bytes(const KVCache& c, size_t n);

}  // namespace akv::prop
