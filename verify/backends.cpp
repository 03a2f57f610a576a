#include "verify/backends.hpp"

#include "optimized/cpu/cpu_backend.hpp"
#include "reference/error.hpp"

namespace akv {

std::vector<std::string> backend_names() { return {"reference", "cpu"}; }

std::unique_ptr<Backend> make_backend(const std::string& name, std::shared_ptr<const Model> model,
                                      const BackendOptions& opt) {
  if (name == "reference") return make_reference_backend(std::move(model));
  if (name == "cpu") return cpu::make_cpu_backend(std::move(model), {opt.isa, opt.threads});
  std::string known;
  for (const auto& n : backend_names()) known += (known.empty() ? "" : ", ") + n;
  throw Error(ErrorCode::kUnknownModel, "unknown backend '" + name + "' (expected one of: " + known + ")");
}

}  // namespace akv
