// The server's own error type (spec/serving.md SV6): an error with the answer it gets, its HTTP
// status and OpenAI's error fields, so that one cause has one code and a full queue, a failed
// audit write and a server that is stopping are never told apart only by their message.
#pragma once
#include <exception>
#include <string>

#include "reference/error.hpp"

namespace akv::serve {

class ApiError : public Error {
 public:
  /// The fields of an error as plain values, for handing an error to another thread without
  /// sharing the exception object (whose reference count lives in the standard library).
  struct Data {
    int status = 500;
    std::string type, code, message, param;
    int retry_after_s = 0;
  };
  explicit ApiError(const Data& d) : ApiError(d.status, d.type, d.code, d.message, d.retry_after_s, d.param) {}
  Data data() const { return {status_, type_, code_, std::string(what()), param_, retry_after_s_}; }

  /// `status` the HTTP status; `type` and `code` OpenAI's error.type and error.code;
  /// `retry_after_s` > 0 adds `Retry-After`; `param` names the request field, "" none.
  ApiError(int status, std::string type, std::string code, const std::string& message, int retry_after_s = 0, std::string param = "")
      : Error(status >= 500 ? ErrorCode::kOutOfResources : ErrorCode::kBadInput, message),
        status_(status), type_(std::move(type)), code_(std::move(code)), param_(std::move(param)), retry_after_s_(retry_after_s) {}
  int status() const { return status_; }
  const std::string& type() const { return type_; }
  const std::string& api_code() const { return code_; }
  const std::string& param() const { return param_; }
  int retry_after_s() const { return retry_after_s_; }

 private:
  int status_;
  std::string type_, code_, param_;
  int retry_after_s_;
};

/// 429 `queue_full`, Retry-After 1: --parallel requests generate and --queue wait.
ApiError queue_full(const std::string& message);
/// 503 `shutting_down`, Retry-After 1: SIGTERM's drain has begun; nothing was queued.
ApiError shutting_down();
/// 500 `audit_log_failed`: the reply's audit line could not be written; the reply is not sent.
ApiError audit_log_failed(const std::string& message);
/// 409 `session_busy`: the session is generating; nothing changed.
ApiError session_busy(const std::string& message);

/// The answer any exception gets (SV6): an ApiError as it is; an akv Error by its code
/// (bad input 400, context 400 `context_length_exceeded`, unknown model 404, unknown session
/// 404, a guard command that failed 500 `guard_failed`, other 500); anything else 500.
ApiError api_error_of(std::exception_ptr e);

}  // namespace akv::serve
