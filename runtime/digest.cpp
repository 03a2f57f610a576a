#include "runtime/digest.hpp"

#include <openssl/evp.h>

#include <memory>
#include <stdexcept>

namespace akv {

Sha256::Sha256() : ctx_(EVP_MD_CTX_new(), EVP_MD_CTX_free) {
  if (!ctx_ || EVP_DigestInit_ex(ctx_.get(), EVP_sha256(), nullptr) != 1) throw std::runtime_error("SHA-256 init failed");
}

void Sha256::add(const void* p, size_t n) {
  if (n && EVP_DigestUpdate(ctx_.get(), p, n) != 1) throw std::runtime_error("SHA-256 update failed");
}

std::string Sha256::hex() {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned len = 0;
  if (EVP_DigestFinal_ex(ctx_.get(), md, &len) != 1) throw std::runtime_error("SHA-256 final failed");
  static const char* d = "0123456789abcdef";
  std::string s;
  for (unsigned i = 0; i < len; ++i) {
    s.push_back(d[md[i] >> 4]);
    s.push_back(d[md[i] & 15]);
  }
  return s;
}

namespace {
void add_cache(Sha256& h, const KVCache& c, size_t n) {
  const size_t bytes = n * c.row_bytes();  // the stored rows (S4): float32, or the type's bytes (S6, S7)
  for (int l = 0; l < c.n_layers(); ++l) {
    h.add(c.k_bytes(l), bytes);
    h.add(c.v_bytes(l), bytes);
  }
}
}  // namespace

std::string sha256_hex(std::span<const unsigned char> bytes) {
  Sha256 h;
  h.add(bytes.data(), bytes.size());
  return h.hex();
}

std::string sha256_hex(std::string_view bytes) {
  Sha256 h;
  h.add(bytes.data(), bytes.size());
  return h.hex();
}

std::string sha256_floats(std::span<const float> v) {
  Sha256 h;
  h.add(v.data(), v.size_bytes());
  return h.hex();
}

std::string cache_sha256(const KVCache& c) { return cache_prefix_sha256(c, c.size()); }

std::string cache_prefix_sha256(const KVCache& c, size_t n) {
  Sha256 h;
  add_cache(h, c, std::min(n, c.size()));
  return h.hex();
}

std::string session_state_sha256(const Session& s) {
  Sha256 h;
  add_cache(h, s.cache(), s.size());
  h.add(s.tokens().data(), s.tokens().size() * sizeof(Token));
  h.add(s.entry_spans().data(), s.entry_spans().size() * sizeof(SpanId));
  for (const SpanInfo& sp : s.spans()) {
    h.add_pod(sp.id);
    h.add_pod(sp.start);
    h.add_pod(sp.length);
  }
  for (SpanId id : s.evicted()) h.add_pod(id);
  if (!s.spans().empty()) {
    auto l = s.logits();
    h.add(l.data(), l.size_bytes());
  }
  h.add_pod(s.tokens_recomputed());
  return h.hex();
}

}  // namespace akv
