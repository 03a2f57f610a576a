// akv rope [--model M] [--positions N] --out F.npy
// akv's one RoPE table (spec/model.md M6) as float32 .npy (2, N, head_dim/2): [0] cos, [1] sin,
// so another implementation can run with exactly akv's angles (docs/crosscheck.md).
#include <fmt/format.h>
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "cli/options.hpp"
#include "cli/shared_options.hpp"
#include "reference/error.hpp"
#include "runtime/models.hpp"
#include "verify/npy.hpp"

namespace akv::cli {

namespace {
struct RopeArgs {
  std::string model = "smollm2";
  uint64_t positions = 0;  // 0: the model's context
  std::string out;
};

int run_rope(const RopeArgs& a) {
  const LoadedModel lm = load_model(a.model, 1);
  const RopeTable& t = *lm.model->rope;
  const uint64_t n = a.positions ? a.positions : static_cast<uint64_t>(t.max_pos);
  if (n > static_cast<uint64_t>(t.max_pos))
    throw Error(ErrorCode::kBadInput, fmt::format("--positions {}: the model's table has {} positions", n, t.max_pos));
  const size_t half = static_cast<size_t>(t.head_dim / 2), rows = static_cast<size_t>(n);
  const float *cos = t.cos_rows(static_cast<int>(rows)), *sin = t.sin_rows(static_cast<int>(rows));
  std::vector<float> both(cos, cos + rows * half);
  both.insert(both.end(), sin, sin + rows * half);
  write_npy_f32(a.out, both, {2, rows, half});
  std::cout << fmt::format("{}: float32 (2, {}, {}): cos, sin of model {} (head_dim {}, theta {})\n", a.out, rows, half,
                           lm.name, t.head_dim, lm.model->config.rope_theta)
            << std::flush;
  return 0;
}
}  // namespace

Command add_rope(CLI::App& app) {
  auto a = std::make_shared<RopeArgs>();
  auto* r = app.add_subcommand("rope", "Write akv's RoPE table (cos, sin) as a float32 .npy file");
  add_model_option(r, a->model);
  r->add_option("--positions", a->positions, "Positions [0, N) (default: the model's context)")
      ->check(decimal(1, UINT32_MAX));
  r->add_option("--out", a->out, "Output .npy file")->required()->check(nonempty());
  return {r, [a] { return run_rope(*a); }};
}

}  // namespace akv::cli
