// The audit log's chain and signatures (spec/serving.md SV9): every line holds the SHA-256 of
// the line before it and, when the server was given a key, an Ed25519 signature of its own
// bytes (OpenSSL), so that a deleted, reordered or edited line is found and the log can be
// shown to a third party to come from the holder of the key.
#pragma once
#include <nlohmann/json.hpp>
#include <openssl/evp.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

namespace akv::serve {

/// The chain fields of a line: "seq" (1, 2, ... over the log's complete lines), "prev_sha256"
/// (SHA-256 of the previous complete line's bytes, without its newline; 64 zeros for the
/// first), and with a key "key" (the Ed25519 public key, 64 hex) and "sig" (128 hex), the
/// line's last member: the signature of the line's bytes with `,"sig":"…"` taken out.
inline constexpr const char* kGenesis = "0000000000000000000000000000000000000000000000000000000000000000";

/// Appends chained (and signed) lines to an audit log. Thread-safe.
class AuditChainWriter {
 public:
  /// Continues the chain of `path` after its last complete line (a line a kill cut is left out
  /// of the chain). `key_file`: a PEM Ed25519 private key (openssl genpkey -algorithm ed25519),
  /// "" to chain without signing. Error(kBadInput) naming the file when it is not such a key or
  /// cannot be read, or when the log's last complete line has no chain fields.
  AuditChainWriter(std::string path, const std::string& key_file);
  ~AuditChainWriter();
  /// Adds the chain fields to `line` (an object holding none of them), writes it on a line of
  /// its own, flushes and fsyncs. Throws audit_log_failed() naming the cause; the chain goes on
  /// from the last line written whole.
  void append(nlohmann::json line);
  /// The public key's hex, "" without a key.
  const std::string& public_key() const { return pub_hex_; }

 private:
  std::string path_;
  EVP_PKEY* key_ = nullptr;
  std::string pub_hex_;
  std::mutex mu_;
  uint64_t seq_ = 0;
  std::string prev_ = kGenesis;
};

/// What the chain check found of one complete line: "" when its seq, prev_sha256 and signature
/// are right, else the reason. `seq` and `prev` are those the line must carry; `pinned_key`
/// (hex, "" none) the key every signature must be of; `signed_log` whether lines must be signed
/// (the first line decides).
std::string check_chain_line(const std::string& text, const nlohmann::json& line, uint64_t seq, const std::string& prev,
                             const std::string& pinned_key, bool signed_log);

/// The Ed25519 public key (64 hex) of a PEM file holding a public or a private key.
/// Error(kBadInput) naming the file otherwise.
std::string ed25519_public_key_hex(const std::string& pem_file);

}  // namespace akv::serve
