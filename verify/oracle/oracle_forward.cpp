#include "verify/oracle/oracle_forward.hpp"

namespace akv::oracle {

std::vector<Real> oracle_logits(const Model& model, std::span<const Token> tokens) {
  const ModelT<Real> m = convert_model<Real>(model);
  return last_logits(m, tokens);
}

std::vector<Real> exact_attention_head(const float* q, const float* k, const float* v, int n, int d) {
  const size_t kv = static_cast<size_t>(n) * d;
  const std::vector<Real> qr(q, q + d), kr(k, k + kv), vr(v, v + kv);
  std::vector<Real> out(d), att(n);
  ref::attention_head(out.data(), qr.data(), kr.data(), vr.data(), n, d, d, att.data());
  return out;
}

}  // namespace akv::oracle
