// The one RapidCheck runner (spec/properties.md): a property run with its parameters, its
// listener and a replay map, each case through an optional wrapper (a time budget), as one
// result. librapidcheck's private functions (the listener that prints the reproduce string at
// exit, the reproduce-string codec) are declared in rc_runner.cpp and nowhere else.
#pragma once
#include <rapidcheck.h>

#include <functional>
#include <string>
#include <unordered_map>

namespace akv::check {

/// At least this many cases per property (more when RC_PARAMS sets max_success).
inline constexpr int kMinCases = 200;

/// RapidCheck's replay map: a property's id -> the case to replay (RC_PARAMS reproduce=).
using ReproduceMap = std::unordered_map<std::string, rc::detail::Reproduce>;

/// RapidCheck's configuration (RC_PARAMS), with at least kMinCases cases unless RC_PARAMS
/// sets max_success itself.
rc::detail::TestParams default_params();

/// RC_PARAMS' reproduce map (empty when it replays nothing).
const ReproduceMap& configured_replay();

/// The map encoded by `text`, the part of a reproduce string after "reproduce=" (RapidCheck's
/// decoder; it throws on text that is no reproduce map).
ReproduceMap parse_reproduce(const std::string& text);

/// A listener that reports nothing (the caller reports through its own result).
rc::detail::TestListener& quiet_listener();

/// One property run: its id (the key of the replay map and of the reproduce string), what it
/// says, its parameters, listener (null: RapidCheck's global one, which prints the reproduce
/// string at exit), replay map (null: configured_replay()) and per-case wrapper (empty: the
/// body alone; else around(body) runs one case, e.g. under a time budget).
struct RcProperty {
  std::string id;
  std::string description;
  rc::detail::TestParams params = default_params();
  rc::detail::TestListener* listener = nullptr;
  const ReproduceMap* replay = nullptr;
  std::function<void(const std::function<void()>& body)> around;
};

/// What a run gave: passed, failed, or gave up (RapidCheck discarded too many cases: neither).
struct RcResult {
  bool passed = false;
  bool failed = false;
  bool gave_up = false;
  int cases = 0;                // successful cases (on failure: those before the first failure)
  std::string message;          // RapidCheck's result message (the shrunk counterexample included)
  std::string description;      // a failure's own message ("" unless failed)
  ReproduceMap failing;         // {{id, the shrunk failing case}}: replays it (empty unless failed)
  std::string reproduce;        // "reproduce=..." (RC_PARAMS) replaying the failure, "" unless failed
};

/// Runs `body` (RC_ASSERTs on values drawn with `*gen`) as the property `p`.
RcResult run_rc(const RcProperty& p, const std::function<void()>& body);

/// Runs `body` (one case); when the case fails (an RC_ASSERT failure, or any exception but
/// a discarded case) calls `failed` first, then rethrows.
template <class Body, class Failed>
void on_case_failure(Body&& body, Failed&& failed) {
  try {
    body();
  } catch (const rc::detail::CaseResult& r) {
    if (r.type == rc::detail::CaseResult::Type::Failure) failed();
    throw;
  } catch (const rc::GenerationFailure&) {
    throw;
  } catch (...) {
    failed();
    throw;
  }
}

}  // namespace akv::check
