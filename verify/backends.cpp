#include "verify/backends.hpp"

#include "reference/error.hpp"

namespace akv {

std::vector<std::string> backend_names() { return {"reference"}; }

std::unique_ptr<Backend> make_backend(const std::string& name, std::shared_ptr<const Model> model) {
  if (name == "reference") return make_reference_backend(std::move(model));
  std::string known;
  for (const auto& n : backend_names()) known += (known.empty() ? "" : ", ") + n;
  throw Error(ErrorCode::kUnknownModel, "unknown backend '" + name + "' (expected one of: " + known + ")");
}

}  // namespace akv
