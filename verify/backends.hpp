// Every backend by name: the one place that knows them all (verify/ sits above reference/
// and optimized/).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "reference/backend.hpp"

namespace akv {

/// Names of the backends built into this binary, "reference" first.
std::vector<std::string> backend_names();

/// Backend by name. Throws Error(kUnknownModel) naming the backends that exist.
std::unique_ptr<Backend> make_backend(const std::string& name, std::shared_ptr<const Model> model);

}  // namespace akv
