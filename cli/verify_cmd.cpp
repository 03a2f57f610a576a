// akv verify FILE [--input PATH] [--redact N:STRING...] [--json]: re-runs the witness a file written by
// `akv witness --out FILE` records and says whether every digest reproduces (spec/operations.md
// O9). Exit 0 only when every digest reproduces and the re-run passed, 1 when not, 2 for a
// file that is not such a witness.
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "cli/options.hpp"
#include "leakage/approx_evict.hpp"
#include "readers/json_limited.hpp"
#include "reference/error.hpp"
#include "reference/strict.hpp"
#include "verify/provenance.hpp"

namespace akv::cli {

namespace {
struct VerifyArgs {
  std::string file, input;
  std::vector<std::string> redact;  // O10: the strings a redaction's file does not keep
  bool json = false;
};

int run_verify_cmd(const VerifyArgs& a) {
  constexpr readers::JsonLimits kWitnessJson{size_t{256} << 20, 64, "spec/input.md IN3"};
  const nlohmann::json j = readers::read_json_file(a.file, kWitnessJson, {ErrorCode::kBadInput, printable(a.file, 200)});
  std::vector<Redaction> redact;
  for (const std::string& r : a.redact) redact.push_back(parse_redaction(r));
  const VerifyReport v = verify_witness(j, a.input, redact, evict_under);
  if (a.json) {
    print_json({{"file", a.file}, {"reproduced", v.reproduced}, {"passed", v.passed}, {"checks", v.lines}});
  } else {
    std::string out = a.file + "\n";
    for (const std::string& l : v.lines) out += "  " + l + "\n";
    out += v.passed ? "VERIFIED: every digest reproduces and the re-run passed\n"
                    : v.reproduced ? "NOT VERIFIED: the digests reproduce but the re-run did not pass\n"
                                   : "NOT VERIFIED: a digest differs\n";
    std::cout << out << std::flush;
  }
  return v.passed ? 0 : 1;
}
}  // namespace

Command add_verify(CLI::App& app) {
  auto a = std::make_shared<VerifyArgs>();
  auto* v = app.add_subcommand("verify", "Re-run a witness written by `akv witness --out FILE` and check that every digest reproduces");
  v->add_option("FILE", a->file, "A witness file (akv witness ... --out FILE)")->required()->check(nonempty());
  v->add_option("--input", a->input, "The conversation, when it is not at the path the file records")->check(nonempty());
  v->add_option("--redact", a->redact, "N:STRING: a redaction's string again, as given to akv witness (the file keeps only its length)")
      ->check(nonempty());
  v->add_flag("--json", a->json, "Print one JSON object instead of text");
  return {v, [a] { return run_verify_cmd(*a); }};
}

}  // namespace akv::cli
