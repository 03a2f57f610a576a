// Typed errors of every akv operation (spec/operations.md O6).
// An operation that throws akv::Error leaves its object bitwise unchanged.
#pragma once
#include <stdexcept>
#include <string>
#include <string_view>

namespace akv {

enum class ErrorCode {
  kUnknownSpan,      // a span id that the session never held
  kSpanEvicted,      // a span id that was already evicted
  kSpanNotAtTail,    // append to an existing span that is not the last one
  kDuplicateSpan,    // the same span named twice in one eviction request
  kContextOverflow,  // the cache would exceed Config::max_ctx
  kEmptyInput,       // no tokens to append / no spans to evict / empty conversation
  kInvalidToken,     // token id outside [0, vocab)
  kEmptyCache,       // next-token logits asked of an empty session
  kBadInput,         // malformed conversation file, unknown role, index out of range
  kUnknownModel,     // a model name that does not exist
  kUnknownBackend,   // a backend name that does not exist
  kBackendUnavailable,  // a backend akv knows that this build or machine lacks (cuda without a device)
  kOutOfResources,   // the machine refused a resource: threads that cannot start
  kBadModel,         // a model file that is malformed, truncated or unsupported (spec/gguf.md)
  kBadKernels,       // a kernel library that cannot be loaded or breaks the ABI's contract (spec/gate.md GT1)
};

/// The name of an error code, as printed in messages and JSON ("unknown_span", ...).
const char* error_code_name(ErrorCode c);

/// The code whose error_code_name is `name` ("bad_kernels" ...); false when none is.
bool error_code_from_name(std::string_view name, ErrorCode& code);

/// The one exception type of akv. what() is a one-line message naming the problem.
class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& msg) : std::runtime_error(msg), code_(code) {}
  ErrorCode code() const { return code_; }

 private:
  ErrorCode code_;
};

}  // namespace akv
