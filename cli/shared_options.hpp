// The options several akv subcommands share (--model, --backend, --isa, --threads, --policy):
// added once, their help and accepted names taken from the registries (runtime/models.hpp,
// runtime/backends.hpp, optimized/cpu/isa.hpp, reference/policy.hpp), never typed (spec/input.md IN9).
#pragma once
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "runtime/backends.hpp"

namespace akv::cli {

/// Adds `--model` to `c` (stored in `model`), its help listing every form model_forms() names.
void add_model_option(CLI::App* c, std::string& model);

/// Adds `--backend` (stored in `backend`), `--isa` and `--threads` (stored in `bo`, the one
/// BackendOptions make_backend() takes) to `c`; help from known_backend_names(),
/// backend_names() and cpu::isa_choices(). A bad value is refused by make_backend() (IN7).
void add_backend_options(CLI::App* c, std::string& backend, BackendOptions& bo);

/// Adds `--kv-type` (stored in `kv`): the cache type of the command's sessions (spec/state.md
/// S5), from kv_type_names(); default f32.
void add_kv_type_option(CLI::App* c, KvType& kv);

}  // namespace akv::cli
