#include "verify/check/run.hpp"

#include <fmt/format.h>

#include <cstring>
#include <vector>

#include "reference/error.hpp"
#include "verify/check/same_bits.hpp"

namespace akv::check {

Run run_chunked(Backend& backend, std::span<const Token> tokens, std::span<const size_t> lengths, KvType kv) {
  check_backend_kv_type(backend, kv);
  size_t total = 0;
  for (size_t len : lengths) {
    if (len == 0) throw Error(ErrorCode::kBadInput, "run_chunked: a call of 0 tokens in the chunk list");
    total += len;
  }
  if (total != tokens.size())
    throw Error(ErrorCode::kBadInput, "run_chunked: the chunk lengths sum to " + std::to_string(total) + ", not the " +
                                          std::to_string(tokens.size()) + " tokens");
  const size_t vocab = static_cast<size_t>(backend.model().config.vocab);
  Run r{KVCache(backend.model().config, kv), std::vector<float>(tokens.size() * vocab)};
  size_t at = 0;
  for (size_t len : lengths) {
    backend.forward(r.cache, tokens.subspan(at, len), std::span<float>(r.logits).subspan(at * vocab, len * vocab));
    at += len;
  }
  return r;
}

namespace {
std::string rows_diff(const char* what, int layer, const float* a, const float* b, size_t n, size_t dim) {
  for (size_t p = 0; p < n; ++p) {
    const BitsDiff d = same_bits({a + p * dim, dim}, {b + p * dim, dim});
    if (!d && d.non_finite)  // A5: a NaN or an Inf compares nothing
      return std::string(what) + " of layer " + std::to_string(layer) + " at entry " + std::to_string(p) + ": " + d.what();
    if (!d)
      return std::string(what) + " of layer " + std::to_string(layer) + " differs first at entry " + std::to_string(p) +
             fmt::format(" (max|delta| {:.3g})", d.max_abs);
  }
  return {};
}
}  // namespace

std::string cache_diff(const KVCache& a, const KVCache& b) {
  if (a.size() != b.size()) return "cache sizes differ: " + std::to_string(a.size()) + " vs " + std::to_string(b.size());
  if (a.n_layers() != b.n_layers() || a.kv_dim() != b.kv_dim()) return "cache shapes differ";
  if (a.type() != b.type()) return std::string("cache types differ: ") + kv_type_name(a.type()) + " vs " + kv_type_name(b.type());
  const size_t dim = static_cast<size_t>(a.kv_dim()), rb = a.row_bytes();
  std::vector<float> ka, kb, va, vb;
  for (int l = 0; l < a.n_layers(); ++l) {
    // The values as attention reads them (S8), then, for a typed cache, the stored bytes (S4).
    std::string d = rows_diff("K", l, a.k_rows(l, 0, a.size(), ka), b.k_rows(l, 0, b.size(), kb), a.size(), dim);
    if (d.empty()) d = rows_diff("V", l, a.v_rows(l, 0, a.size(), va), b.v_rows(l, 0, b.size(), vb), a.size(), dim);
    for (size_t p = 0; d.empty() && p < a.size(); ++p)
      if (std::memcmp(a.k_bytes(l) + p * rb, b.k_bytes(l) + p * rb, rb) != 0 ||
          std::memcmp(a.v_bytes(l) + p * rb, b.v_bytes(l) + p * rb, rb) != 0)
        d = "the stored bytes of layer " + std::to_string(l) + " differ first at entry " + std::to_string(p) +
            " (the same values as float32)";
    if (!d.empty()) return d;
  }
  return {};
}

std::string run_diff(const Run& a, const Run& b) {
  if (std::string d = cache_diff(a.cache, b.cache); !d.empty()) return "cache: " + d;
  if (const BitsDiff d = same_bits(a.logits, b.logits); !d) return "logits: " + d.what();
  return {};
}

}  // namespace akv::check
