// SHA-256 digests of cache and logits bytes (OpenSSL EVP), the witness's evidence
// (spec/operations.md O5).
#pragma once
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "reference/kv_cache.hpp"
#include "reference/session.hpp"

struct evp_md_ctx_st;

namespace akv {

/// An incremental SHA-256 (OpenSSL EVP): add() bytes, then hex() once.
class Sha256 {
 public:
  Sha256();
  void add(const void* p, size_t n);
  template <class T>
  void add_pod(const T& v) { add(&v, sizeof v); }
  /// Lower-case hex of the digest of everything added; call once.
  std::string hex();

 private:
  std::unique_ptr<evp_md_ctx_st, void (*)(evp_md_ctx_st*)> ctx_;
};

/// Lower-case hex SHA-256 of `bytes`.
std::string sha256_hex(std::span<const unsigned char> bytes);
/// Lower-case hex SHA-256 of a string's bytes.
std::string sha256_hex(std::string_view bytes);

/// SHA-256 of the float32 bytes (little-endian, as in memory) of `v`.
std::string sha256_floats(std::span<const float> v);

/// SHA-256 of the cache's K/V bytes: for each layer in order, K rows [0, size()) then
/// V rows [0, size()), each row as stored: kv_dim float32, or the cache type's row bytes
/// (spec/state.md S4, S6, S7) (O5).
std::string cache_sha256(const KVCache& cache);

/// SHA-256 of the cache's first `n` entries only (the prefix of E3), same layout.
std::string cache_prefix_sha256(const KVCache& cache, size_t n);

/// SHA-256 of a session's whole observable state: cache bytes, token and span ids of every
/// entry, the span table, the evicted set, the next-token logits and the recompute counter.
/// Equal before and after a failed operation (O6).
std::string session_state_sha256(const Session& s);

}  // namespace akv
