#include "verify/provenance.hpp"

#include "runtime/build_info.hpp"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <vector>

#include "readers/conversation/chat_parse.hpp"
#include "readers/mapped_file.hpp"
#include "optimized/cpu/isa.hpp"
#include "reference/chat.hpp"
#include "reference/error.hpp"
#include "runtime/digest.hpp"
#include "runtime/models.hpp"

namespace akv {

namespace fs = std::filesystem;

namespace {

template <class T>
T get(const nlohmann::json& o, const char* key) {
  if (!o.contains(key)) throw Error(ErrorCode::kBadInput, fmt::format("provenance.options: '{}' missing", key));
  try {
    return o[key].get<T>();
  } catch (const nlohmann::json::exception&) {
    throw Error(ErrorCode::kBadInput, fmt::format("provenance.options: '{}' has the wrong type", key));
  }
}

// O10: a redaction is recorded without its string (a witness file never repeats a secret).
nlohmann::json redactions_json(const std::vector<RedactionCount>& counts) {
  nlohmann::json a = nlohmann::json::array();
  for (const RedactionCount& c : counts) a.push_back({{"message", c.message}, {"bytes", c.bytes}});
  return a;
}

// The redactions `given` to akv verify, checked against those the file records: the same
// messages and byte lengths, in order (the digests then say whether the strings were the same).
std::vector<Redaction> checked_redactions(const nlohmann::json& o, const std::vector<Redaction>& given) {
  const nlohmann::json rec = o.contains("redact") ? o["redact"] : nlohmann::json::array();
  if (!rec.is_array()) throw Error(ErrorCode::kBadInput, "provenance.options: 'redact' has the wrong type");
  std::string want;
  for (const auto& e : rec) {
    if (!e.is_object() || !e.contains("message") || !e.contains("bytes") || !e["message"].is_number_unsigned() ||
        !e["bytes"].is_number_unsigned())
      throw Error(ErrorCode::kBadInput, "provenance.options: 'redact' entries need an unsigned 'message' and 'bytes'");
    want += fmt::format("{}--redact {}:STRING ({} bytes)", want.empty() ? "" : " ", e["message"].get<size_t>(), e["bytes"].get<size_t>());
  }
  bool same = rec.size() == given.size();
  for (size_t i = 0; same && i < given.size(); ++i)
    same = rec[i]["message"].get<size_t>() == given[i].message && rec[i]["bytes"].get<size_t>() == given[i].text.size();
  if (!same)
    throw Error(ErrorCode::kBadInput,
                rec.empty() ? std::string("--redact: the witness redacted nothing")
                            : "the witness redacted strings it does not keep: give them again, in order: " + want);
  return given;
}

}  // namespace

nlohmann::json witness_provenance(const std::string& file, const WitnessOptions& opt, const WitnessReport& r) {
  const bool synthetic = r.model_source.rfind("synthetic", 0) == 0;
  return {
      {"akv", {{"version", akv_version()}, {"commit", akv_commit()}}},
      {"input", {{"path", file}, {"sha256", file_or_folder_sha256(file)}}},
      {"model",
       {{"name", r.model},
        {"source", r.model_source},
        {"sha256", synthetic ? nlohmann::json(nullptr) : nlohmann::json(file_or_folder_sha256(r.model_source))}}},
      {"options",
       {{"evict", r.evicted},
        {"redact", redactions_json(r.redacted)},
        {"model", opt.model},
        {"seed", opt.seed},
        {"backend", opt.backend},
        {"isa", opt.backend_options.isa},
        {"threads", opt.backend_options.threads},
        {"kernels", opt.backend_options.kernels},
        {"kv_type", kv_type_name(opt.kv_type)},
        {"policy", policy_name(opt.policy)},
        {"logit_rows", opt.logit_rows == LogitRows::kAll ? "all" : "last"},
        {"same_config", opt.same_config},
        {"cross_threads", opt.cross_threads},
        {"cross_isa", opt.cross_isa}}},
      {"machine", {{"cpu", cpu_model()}, {"isa", r.isa}, {"cross_config", r.cross_config}}},
      {"created", utc_now()},
  };
}

WitnessOptions options_from_provenance(const nlohmann::json& o, const std::vector<Redaction>& redact) {
  if (!o.is_object()) throw Error(ErrorCode::kBadInput, "provenance.options: expected an object");
  WitnessOptions w;
  w.evict = get<std::vector<size_t>>(o, "evict");
  w.redact = checked_redactions(o, redact);
  w.model = get<std::string>(o, "model");
  w.seed = get<uint64_t>(o, "seed");
  w.backend = get<std::string>(o, "backend");
  w.backend_options.isa = get<std::string>(o, "isa");
  w.backend_options.threads = get<int>(o, "threads");
  w.backend_options.kernels = get<std::string>(o, "kernels");
  // The cache type (spec/state.md S5): a witness written before types existed ran f32.
  w.kv_type = o.contains("kv_type") ? parse_kv_type(get<std::string>(o, "kv_type")) : KvType::kF32;
  w.policy = parse_policy(get<std::string>(o, "policy"));
  const std::string rows = get<std::string>(o, "logit_rows");
  if (rows != "last" && rows != "all") throw Error(ErrorCode::kBadInput, "provenance.options: 'logit_rows' is not last or all");
  w.logit_rows = rows == "all" ? LogitRows::kAll : LogitRows::kLast;
  w.same_config = get<bool>(o, "same_config");
  w.cross_threads = get<int>(o, "cross_threads");
  w.cross_isa = get<std::string>(o, "cross_isa");
  return w;
}

VerifyReport verify_witness(const nlohmann::json& j, const std::string& input_override, const std::vector<Redaction>& redact,
                            const ApproxEvict& approximate) {
  if (!j.is_object() || !j.contains("provenance") || !j["provenance"].is_object())
    throw Error(ErrorCode::kBadInput, "not a witness file: no \"provenance\" object (write one with akv witness --out FILE)");
  const nlohmann::json& p = j["provenance"];
  for (const char* k : {"input", "model", "options"})
    if (!p.contains(k) || !p[k].is_object()) throw Error(ErrorCode::kBadInput, fmt::format("provenance: '{}' missing", k));
  VerifyReport v;
  bool ok = true;
  const auto line = [&](const std::string& what, const std::string& want, const std::string& got) {
    const bool same = want == got;
    ok = ok && same;
    v.lines.push_back(same ? fmt::format("{}: {} reproduces", what, want.substr(0, 16))
                           : fmt::format("{}: recorded {}, now {}: DIFFERS", what, want.substr(0, 16), got.substr(0, 16)));
  };
  const std::string input = input_override.empty() ? p["input"].value("path", "") : input_override;
  if (input.empty()) throw Error(ErrorCode::kBadInput, "provenance.input: no path");
  line("input sha256", p["input"].value("sha256", ""), file_or_folder_sha256(input));
  WitnessOptions opt = options_from_provenance(p["options"], redact);
  opt.approximate = approximate;
  const WitnessReport r = run_witness(load_conversation(input), opt);
  if (p["model"].contains("sha256") && p["model"]["sha256"].is_string())
    line("model sha256", p["model"]["sha256"].get<std::string>(), file_or_folder_sha256(r.model_source));
  for (const auto& [key, got] : {std::pair<std::string, std::string>{"cache_sha256_evicted", r.cache_sha256_evicted},
                                 {"cache_sha256_never", r.cache_sha256_never},
                                 {"logits_sha256_evicted", r.logits_sha256_evicted},
                                 {"logits_sha256_never", r.logits_sha256_never},
                                 {"logits_sha256_poisoned", r.logits_sha256_poisoned}})
    line(key, j.value(key, ""), got);
  if (p.contains("machine") && p["machine"].value("isa", "") != r.isa)
    v.lines.push_back(fmt::format("note: recorded on {}, re-run on {} (every ISA gives the same bits, K0)",
                                  p["machine"].value("isa", ""), r.isa));
  v.reproduced = ok;
  v.passed = ok && r.passed();
  const std::string text = to_text(r);
  v.lines.push_back(r.passed() ? "the re-run passed (O5)" : "the re-run FAILED (O5): " + text.substr(text.rfind("FAIL")));
  return v;
}

}  // namespace akv
