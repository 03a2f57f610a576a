#include "reference/error.hpp"

namespace akv {

const char* error_code_name(ErrorCode c) {
  switch (c) {
    case ErrorCode::kUnknownSpan: return "unknown_span";
    case ErrorCode::kSpanEvicted: return "span_evicted";
    case ErrorCode::kSpanNotAtTail: return "span_not_at_tail";
    case ErrorCode::kDuplicateSpan: return "duplicate_span";
    case ErrorCode::kContextOverflow: return "context_overflow";
    case ErrorCode::kEmptyInput: return "empty_input";
    case ErrorCode::kInvalidToken: return "invalid_token";
    case ErrorCode::kEmptyCache: return "empty_cache";
    case ErrorCode::kBadInput: return "bad_input";
    case ErrorCode::kUnknownModel: return "unknown_model";
    case ErrorCode::kBadModel: return "bad_model";
    case ErrorCode::kBadKernels: return "bad_kernels";
    case ErrorCode::kUnknownBackend: return "unknown_backend";
    case ErrorCode::kBackendUnavailable: return "backend_unavailable";
    case ErrorCode::kOutOfResources: return "out_of_resources";
  }
  return "unknown";
}

bool error_code_from_name(std::string_view name, ErrorCode& code) {
  // The codes are the enum's values 0, 1, ...; error_code_name answers "unknown" past the last.
  for (int i = 0;; ++i) {
    const std::string_view n = error_code_name(static_cast<ErrorCode>(i));
    if (n == "unknown") return false;
    if (n == name) {
      code = static_cast<ErrorCode>(i);
      return true;
    }
  }
}

}  // namespace akv
