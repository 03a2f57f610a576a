#include "serve/api_error.hpp"

#include "serve/guard.hpp"

namespace akv::serve {

ApiError queue_full(const std::string& message) { return ApiError(429, "rate_limit_error", "queue_full", message, 1); }

ApiError shutting_down() { return ApiError(503, "server_error", "shutting_down", "the server is shutting down", 1); }

ApiError audit_log_failed(const std::string& message) {
  return ApiError(500, "server_error", "audit_log_failed", message + "; the reply was not sent (spec/serving.md SV9)");
}

ApiError session_busy(const std::string& message) { return ApiError(409, "invalid_request_error", "session_busy", message); }

ApiError api_error_of(std::exception_ptr ep) {
  try {
    std::rethrow_exception(ep);
  } catch (const ApiError& e) {
    return e;
  } catch (const GuardFailed& e) {
    return ApiError(500, "server_error", "guard_failed", e.what());
  } catch (const Error& e) {
    switch (e.code()) {
      case ErrorCode::kBadInput:
      case ErrorCode::kInvalidToken:
      case ErrorCode::kEmptyInput:
        return ApiError(400, "invalid_request_error", error_code_name(e.code()), e.what());
      case ErrorCode::kContextOverflow:
        return ApiError(400, "invalid_request_error", "context_length_exceeded", e.what());
      case ErrorCode::kUnknownModel:
        return ApiError(404, "invalid_request_error", "model_not_found", e.what());
      case ErrorCode::kUnknownSpan:
        return ApiError(404, "invalid_request_error", "session_not_found", e.what());
      default:
        return ApiError(500, "server_error", error_code_name(e.code()), e.what());
    }
  } catch (const std::exception& e) {
    return ApiError(500, "server_error", "internal", e.what());
  } catch (...) {
    return ApiError(500, "server_error", "internal", "an unknown exception");
  }
}

}  // namespace akv::serve
