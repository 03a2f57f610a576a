#include "cli/shared_options.hpp"

#include "cli/options.hpp"
#include "runtime/backends.hpp"
#include "runtime/models.hpp"

namespace akv::cli {

void add_model_option(CLI::App* c, std::string& model) {
  c->add_option("--model", model, "Model: " + names_help(model_forms()))->capture_default_str()->check(nonempty());
}

void add_backend_options(CLI::App* c, std::string& backend, BackendOptions& bo) {
  auto* b = c->add_option("--backend", backend,
                "Backend: " + names_help(known_backend_names()) + " (in this build and on this machine: " +
                    names_help(backend_names()) + ")")
      ->capture_default_str()
      ->check(nonempty());
  c->add_option("--isa", bo.isa, "cpu backend ISA: " + names_help(isa_choices()) + " (auto: $AKV_ISA, else the best)")
      ->capture_default_str()
      ->check(nonempty());
  c->add_option("--threads", bo.threads, "cpu backend threads (0: $AKV_THREADS, else 2)")
      ->capture_default_str()
      ->check(decimal(0, max_threads()));
  c->add_option("--kernels", bo.kernels,
                "A kernel library (include/akv/kernels.h): run the composed forward over its ops in place of --backend "
                "(as `akv gate` does; spec/gate.md GT7)")
      ->check(nonempty())
      ->excludes(b);
}

}  // namespace akv::cli
