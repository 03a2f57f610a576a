// xgrammar's log, caught (internal to chat/): scripts/fetch-xgrammar builds xgrammar with
// XGRAMMAR_LOG_CUSTOMIZE=1, so its warnings and fatal errors call two functions defined in
// engine_log.cpp. A warning is how xgrammar says it ignores part of a schema ("multipleOf is not
// supported for type:number; ignoring multipleOf"): under an EngineLog it is collected, so the
// caller refuses the schema instead (spec/serving.md SV14: nothing silently ignored).
#pragma once
#include <exception>
#include <string>
#include <vector>

namespace akv::chat::detail {

/// Collects the warnings xgrammar logs on this thread while it lives (nested logs: the innermost
/// collects). Warnings outside any EngineLog go to stderr, prefixed "akv: xgrammar: ".
class EngineLog {
 public:
  EngineLog();
  ~EngineLog();
  EngineLog(const EngineLog&) = delete;
  EngineLog& operator=(const EngineLog&) = delete;
  const std::vector<std::string>& warnings() const { return warnings_; }

 private:
  std::vector<std::string> warnings_;
  std::vector<std::string>* previous_;
};

/// The one-line text of an exception xgrammar threw: its fatal errors without the "Check
/// failed: (COND) is false: " prefix, newlines as spaces.
std::string engine_message(const std::exception& e);

}  // namespace akv::chat::detail
