#include "verify/oracle/oracle_forward.hpp"

namespace akv::oracle {

std::vector<Real> oracle_logits(const Model& model, std::span<const Token> tokens) {
  const ModelT<Real> m = convert_model<Real>(model);
  return last_logits(m, tokens);
}

}  // namespace akv::oracle
