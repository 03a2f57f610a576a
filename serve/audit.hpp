// akv audit LOG: the offline replay of a server's audit log (spec/serving.md SV9).
#pragma once
#include <string>
#include <vector>

namespace akv::serve {

/// One line's replay: reproduced when a cold engine gives the same tokens, finish reason,
/// cache digest and logits digest to the logged request (less the messages it dropped).
struct AuditLine {
  size_t line = 0;  // 1-based
  bool reproduced = false;
  std::string why;  // what differed, or why it could not be replayed ("" when reproduced)
};

struct AuditReport {
  std::vector<AuditLine> lines;
  size_t replies = 0;       // chat lines replayed (evict and forget lines are checked, not replayed)
  bool signed_log = false;  // the lines carry Ed25519 signatures
  std::string key;          // the public key they are signed with (hex), "" when not signed
  /// Lines a kill cut while the server wrote them (an audit line's start, its JSON unfinished;
  /// the last line without a newline): their replies never completed, since a line is fsync'ed
  /// before its reply is sent. Left out, and said (1-based).
  std::vector<size_t> cut_lines;
  size_t reproduced() const;
  /// True only when at least one reply was replayed and every line checked (never vacuous).
  bool passed() const;
  /// The first line that failed (1-based), 0 when none did.
  size_t first_failure() const;
};

/// Checks every line of `path` (SV9): its chain (seq, the previous line's SHA-256) and its
/// Ed25519 signature (against `pinned_key`, hex, when given); then replays each chat line on a
/// cold engine of the logged model (or `model_override`), on the logged backend and threads,
/// checks that every dropped message was guarded in that line or flagged by an earlier line of
/// its session (an evict line, an earlier guard verdict), and checks each evict line's flags
/// against the session's last logged request. A line that is not an audit line, or whose model file's
/// SHA-256 differs from the logged one, is a failure naming why. Throws Error(kBadInput) when
/// the file cannot be read. Lines a kill cut are not replayed (cut_lines). The request is the
/// logged bytes, checked against the logged SHA-256; the replay runs with the logged default
/// max_tokens and guard regexes, which must flag the same messages. A guard command is not
/// re-run: its logged verdicts drop their messages, as an endpoint's evictions do.
AuditReport replay_audit_log(const std::string& path, const std::string& model_override = "", const std::string& pinned_key = "");

}  // namespace akv::serve
