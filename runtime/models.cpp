#include "runtime/models.hpp"

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <sys/wait.h>

#include "chat/chatml.hpp"
#include "chat/gemma_chat.hpp"
#include "chat/turn_encoder.hpp"
#include "readers/gguf/gguf.hpp"
#include "readers/gguf/gguf_config.hpp"
#include "readers/gguf/gguf_weights.hpp"
#include "readers/hf/hf_weights.hpp"
#include "readers/json_limited.hpp"
#include "readers/mapped_file.hpp"
#include "reference/error.hpp"
#include "reference/synthetic_spec.hpp"
#include "runtime/digest.hpp"
#include "chat/published_templates.hpp"

namespace akv {

namespace {
namespace fs = std::filesystem;

// The pins of scripts/fetch-model (spec/gguf.md F1; a test keeps the two equal): the real
// models by name, the first the default.
struct RealModel {
  const char* name;
  const char* file;
  uint64_t size;
  const char* sha256;
};
constexpr RealModel kRealModels[] = {
    {"smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf", 98362432, "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"},
    {"gemma3-270m", "gemma-3-270m-q4_k_m.gguf", 253113024, "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"},
};

std::string models_dir() {
  if (const char* m = std::getenv("AKV_MODELS"); m && *m) return m;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return (fs::path(x) / "akv" / "models").string();
  const char* h = std::getenv("HOME");
  return (fs::path(h && *h ? h : "/") / ".cache" / "akv" / "models").string();
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// scripts/fetch-model, found at run time (never a path compiled in): $AKV_FETCH_MODEL when set,
// else the first `scripts/fetch-model` or `share/akv/scripts/fetch-model` in the folders
// above the running executable (a build tree inside the checkout; an install prefix). "" when
// there is none.
std::string fetch_script() {
  if (const char* e = std::getenv("AKV_FETCH_MODEL"); e && *e) return e;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  for (fs::path dir = exe.parent_path(); !dir.empty(); dir = dir.parent_path()) {
    for (const fs::path& p : {dir / "scripts" / "fetch-model", dir / "share" / "akv" / "scripts" / "fetch-model"})
      if (fs::is_regular_file(p, ec)) return p.string();
    if (dir == dir.root_path()) break;
  }
  return "";
}

// Runs scripts/fetch-model and returns what it printed, or "" when the script is not there or
// failed (it printed its own one-line reason on stderr).
std::string run_fetch_script(const std::string& name) {
  const std::string script = fetch_script();
  if (script.empty() || !fs::exists(script)) return "";
  FILE* p = popen(("'" + script + "' " + name).c_str(), "r");
  if (!p) return "";
  std::string out;
  std::array<char, 4096> buf{};
  while (fgets(buf.data(), buf.size(), p)) out += buf.data();
  const int st = pclose(p);
  if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) return "";
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

// The cached default model, verified against the pins; fetched once when missing.
std::string real_model_file(const RealModel& r) {
  const char* kDefaultRealModel = r.name;
  std::string path = (fs::path(models_dir()) / r.file).string();
  if (!fs::exists(path)) {
    const std::string fetched = run_fetch_script(r.name);
    if (fetched.empty() || !fs::exists(fetched))
      throw Error(ErrorCode::kBadModel,
                  fmt::format("model '{}': {} is not in the model cache and could not be fetched{}; run "
                              "scripts/fetch-model with network to PyPI, or use --model small offline",
                              kDefaultRealModel, path,
                              fetch_script().empty() ? " (no scripts/fetch-model above this executable; set AKV_FETCH_MODEL)" : ""));
    path = fetched;
  }
  const auto bytes = readers::map_file(path);
  if (bytes->size() != r.size || sha256_hex({bytes->data(), static_cast<size_t>(bytes->size())}) != r.sha256)
    throw Error(ErrorCode::kBadModel,
                fmt::format("model '{}': {} does not match the pinned size and SHA-256 (spec/gguf.md F1); delete it "
                            "and run scripts/fetch-model",
                            kDefaultRealModel, path));
  return path;
}

// C6: every id the tokenizer can produce has a logit and an embedding row: a model with fewer
// would fail only when a high id is appended, far from the cause.
void check_vocab(const LoadedModel& m, const std::string& file) {
  const int tok = m.encoder->vocab_size(), model = m.model->config.vocab;
  if (tok > model)
    throw Error(ErrorCode::kBadModel,
                fmt::format("{}: the model has {} token rows (vocab) but its tokenizer has {} tokens: ids {}..{} would have no "
                            "embedding and no logit (spec/gguf.md C6)",
                            file, model, tok, model, tok - 1));
}

// The chat encoder of a GGUF file, by its template, tokenizer and architecture (spec/tokenizer.md
// CT1, CT12, CT13): a published template of CT7-CT9 over either tokenizer; byte-level BPE with
// ChatML; SentencePiece with Gemma's turns for gemma3. Any other pairing is refused naming both.
std::shared_ptr<const ChatEncoder> gguf_encoder(const readers::GgufFile& f) {
  const std::string tok(f.get_string("tokenizer.ggml.model"));
  const std::string arch(f.get_string("general.architecture"));
  // CT13: a published template akv renders, recognised by its digest, over the file's tokenizer.
  if (const auto text = f.find_string("tokenizer.chat_template"))
    if (const auto t = published_turn_template(*text)) return chat::make_turn_encoder(*t, f);
  if (tok == "llama") {
    if (arch == "gemma3") return chat::make_gemma_encoder(f);
    throw Error(ErrorCode::kBadModel, fmt::format("{}: tokenizer 'llama' (SentencePiece) with architecture '{}': akv has no chat "
                                                  "template for it (SentencePiece models: gemma3, spec/tokenizer.md CT12)",
                                                  f.name(), arch.substr(0, 40)));
  }
  return chat::make_chatml_encoder(f);
}

LoadedModel load_gguf(const std::string& path, const std::string& name) {
  LoadedModel m;
  const readers::GgufFile f = readers::GgufFile::open(path);
  m.encoder = gguf_encoder(f);  // the tokenizer first: it fails fast on a bad file
  m.model = readers::load_gguf_model(f, name);
  check_vocab(m, path);
  m.name = name;
  m.source = path;
  m.real = true;
  return m;
}
// A Hugging Face folder (spec/safetensors.md): config.json + safetensors; its tokenizer.json and
// the chat template of tokenizer_config.json give the encoder (spec/tokenizer.md T1, CT1).
LoadedModel load_hf(const std::string& dir) {
  const fs::path tj = fs::path(dir) / "tokenizer.json", tc = fs::path(dir) / "tokenizer_config.json";
  if (!fs::exists(tj) || !fs::exists(tc))
    throw Error(ErrorCode::kBadModel, fmt::format("{}: no tokenizer.json and tokenizer_config.json: akv needs the model's own "
                                                  "tokenizer and chat template (save the tokenizer with the model)",
                                                  dir));
  constexpr readers::JsonLimits kTokenizerConfigJson{size_t{16} << 20, 32, "spec/tokenizer.md CT1"};
  const nlohmann::json cfg = readers::read_json_file(tc.string(), kTokenizerConfigJson, {ErrorCode::kBadModel, tc.string()});
  if (!cfg.is_object() || !cfg.contains("chat_template") || !cfg["chat_template"].is_string())
    throw Error(ErrorCode::kBadModel, fmt::format("{}: no string 'chat_template'", tc.string()));
  LoadedModel m;
  m.encoder = chat::make_chatml_encoder(readers::BpeTokenizer::from_tokenizer_json(tj.string()),
                                         cfg["chat_template"].get<std::string>(), tc.string());
  m.model = readers::load_hf_model(dir, dir);
  check_vocab(m, dir);
  m.name = dir;
  m.source = dir;
  m.real = true;
  return m;
}
}  // namespace

std::vector<std::string> model_names() {
  std::vector<std::string> n = config_names();
  for (const RealModel& r : kRealModels) n.push_back(r.name);
  return n;
}

std::vector<std::string> model_forms() {
  std::vector<std::string> n = model_names();
  n.push_back("PATH.gguf");
  n.push_back("HF-FOLDER");
  n.push_back("synthetic:SPEC");
  return n;
}

std::string default_real_model_path() { return real_model_path(kDefaultRealModel); }

std::string real_model_path(const std::string& name) {
  for (const RealModel& r : kRealModels)
    if (name == r.name) return (fs::path(models_dir()) / r.file).string();
  throw Error(ErrorCode::kUnknownModel, "unknown real model '" + name + "'");
}

LoadedModel load_model(const std::string& spec, uint64_t seed) {
  for (const RealModel& r : kRealModels)
    if (spec == r.name) return load_gguf(real_model_file(r), r.name);
  if (ends_with(spec, ".gguf")) return load_gguf(spec, spec);
  if (fs::is_directory(spec)) return load_hf(spec);
  const auto synthetic = [&](const Config& c) {
    LoadedModel m;
    m.model = make_model(c, seed);
    m.encoder = make_fixture_encoder(c.vocab);
    m.name = c.name;
    m.source = fmt::format("synthetic, seed {}", seed);
    m.seed = seed;
    return m;
  };
  if (is_synthetic_spec(spec)) return synthetic(synthetic_config(spec));
  for (const std::string& n : config_names())
    if (n == spec) return synthetic(config_by_name(spec));
  std::string names;
  for (const std::string& n : model_names()) names += (names.empty() ? "" : ", ") + n;
  throw Error(ErrorCode::kUnknownModel,
              fmt::format("unknown model '{}' (models: {}, a synthetic shape 'synthetic:hidden=...', a path to a .gguf file, or a "
                          "Hugging Face model folder)",
                          spec, names));
}

}  // namespace akv
