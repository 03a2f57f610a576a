// The invariance checks (spec/theorems.md I1, E1; spec/kernels-cpu.md K8, K9, K11;
// spec/kernels-cuda.md G7, G8), written once for every backend variant: a token's bits depend
// on the token sequence up to it and nothing else. Each returns a Report (failures, count of
// comparisons, or why it does not apply); the models are the synthetic tiny and small.
#pragma once
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "reference/backend.hpp"
#include "verify/check/models.hpp"
#include "verify/check/report.hpp"
#include "verify/check/variants.hpp"

namespace akv::check {

/// One call of n tokens equals n-1 then one decode step (tiny 300 tokens, small 150).
Report one_call_equals_then_decode(const Variant& v);

/// One call equals fixed chunkings (8 x 64 on tiny and small, boundaries on and off the
/// 64-key blocks) and three random chunkings (tiny 300, small 64 tokens).
Report chunkings_equal_one_call(const Variant& v);

/// Token-by-token decode equals one prefill call (tiny 300 tokens, small 70).
Report decode_equals_prefill(const Variant& v);

/// A call longer than the cuda backend's internal chunk (cuda::kMaxRows rows) equals it split
/// (tiny; on the cuda device also small with five chunkings).
Report longer_than_one_chunk(const Variant& v);

/// Scratch poisoned with NaN, -3e38, 1e30, 0 or left alone, and scratch left by an earlier
/// run of the same backend, change nothing (tiny 200, small 50 tokens).
Report scratch_changes_nothing(const Variant& v);

/// A backend that served unrelated work before (another object, and the same object between
/// two runs) gives the bits of a fresh one (tiny 150 tokens).
Report earlier_work_changes_nothing(const Variant& v);

/// Each session of a forward_batch (0, 40, 70 tokens of history; 37, 1, 20 appended) gets
/// the bits it gets alone (small).
Report batch_equals_alone(const Variant& v);

/// The cpu backend at v.threads threads gives the bits of the same ISA at one thread (small,
/// 100 tokens, calls of 70, 1, 29). Skipped for backends without threads and for one thread.
Report threads_change_nothing(const Variant& v);

/// Evicting `evict` (span indexes of `spans`, span id = index) from a session of all spans
/// leaves the cache, entry tokens and next-token logits bitwise those of a session that never
/// saw them, and so does a span appended after; the control: before the eviction the logits
/// differed (max|delta| > 0). Sessions on two fresh backends of v when `two_backends`, else
/// on one. `name` labels the failures.
Report evict_equals_never(const Variant& v, std::shared_ptr<const Model> model,
                          const std::vector<std::vector<Token>>& spans, const std::set<size_t>& evict,
                          const std::string& name, bool two_backends = true);

}  // namespace akv::check
