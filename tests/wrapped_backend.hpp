// The base of the tests' deliberately broken backends: the reference backend under another
// name, everything forwarded; a subclass overrides forward_rows() to break one promise.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "reference/backend.hpp"

namespace akv::test {

class WrappedReference : public Backend {
 public:
  WrappedReference(std::shared_ptr<const Model> m, std::string name)
      : inner_(make_reference_backend(std::move(m))), name_(std::move(name)) {}
  std::string name() const override { return name_; }
  const Model& model() const override { return inner_->model(); }
  BackendDescription describe() const override {
    BackendDescription d = inner_->describe();
    d.name = name_;
    return d;
  }
  void set_scratch_poison(std::optional<float> v) override { inner_->set_scratch_poison(v); }

 protected:
  std::unique_ptr<Backend> inner_;

 private:
  std::string name_;
};

}  // namespace akv::test
