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

void add_kv_type_option(CLI::App* c, KvType& kv) {
  c->add_option_function<std::string>(
       "--kv-type", [&kv](const std::string& name) { kv = parse_kv_type(name); },
       "Cache type of the sessions: " + names_help(kv_type_names()) +
           " (spec/state.md S5: f16 and q8_0 round each K/V row once, when written; default f32)")
      ->check(one_of(kv_type_names()));
}

}  // namespace akv::cli
