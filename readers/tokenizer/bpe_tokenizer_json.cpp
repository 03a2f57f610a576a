// BpeTokenizer::from_tokenizer_json: a Hugging Face tokenizer.json holding byte-level BPE with
// SmolLM2's pre-tokenizer (spec/tokenizer.md T1, T3).
#include <nlohmann/json.hpp>

#include "readers/json_limited.hpp"
#include "readers/tokenizer/bpe_tokenizer.hpp"
#include "reference/error.hpp"

namespace akv::readers {

namespace {

using json = nlohmann::json;

[[noreturn]] void bad(const std::string& path, const std::string& field, const std::string& what) {
  throw Error(ErrorCode::kBadModel, path + ": " + field + ": " + what);
}

bool is(const json& j, const char* key, const json& want) { return j.is_object() && j.contains(key) && j[key] == want; }
bool null_or(const json& j, const char* key, const json& empty) {
  return !j.contains(key) || j[key].is_null() || j[key] == empty;
}

// The pre-tokenizer's name when it is one akv implements (T3), else "".
std::string pre_name(const json& p) {
  if (!is(p, "type", "Sequence") || !p.contains("pretokenizers") || !p["pretokenizers"].is_array() ||
      p["pretokenizers"].size() != 2)
    return "";
  const json& d = p["pretokenizers"][0];
  const json& b = p["pretokenizers"][1];
  if (is(d, "type", "Digits") && is(d, "individual_digits", true) && is(b, "type", "ByteLevel") &&
      is(b, "add_prefix_space", false) && is(b, "use_regex", true))
    return "smollm";
  return "";
}

}  // namespace

BpeTokenizer BpeTokenizer::from_tokenizer_json(const std::string& path) {
  // Hugging Face's tokenizer.json files run to tens of MiB (SmolLM2's is 2 MiB) and nest
  // about 8 levels (post_processor.processors[i].special_tokens.KEY.ids).
  constexpr JsonLimits kTokenizerJson{size_t{256} << 20, 32, "spec/tokenizer.md T1"};
  const json j = read_json_file(path, kTokenizerJson, {ErrorCode::kBadModel, path + ": file"});
  if (!j.is_object() || !j.contains("model") || !j["model"].is_object()) bad(path, "model", "missing");
  const json& m = j["model"];
  if (!is(m, "type", "BPE")) bad(path, "model.type", "not BPE (akv reads byte-level BPE)");
  if (!null_or(j, "normalizer", nullptr)) bad(path, "normalizer", "a normalizer is not supported");
  if (!null_or(m, "unk_token", nullptr) || !null_or(m, "byte_fallback", false) || !null_or(m, "ignore_merges", false) ||
      !null_or(m, "continuing_subword_prefix", "") || !null_or(m, "end_of_word_suffix", "") ||
      !null_or(m, "dropout", nullptr))
    bad(path, "model", "unk_token, byte_fallback, ignore_merges, dropout or a prefix/suffix is set (not supported)");
  const std::string pre = j.contains("pre_tokenizer") ? pre_name(j["pre_tokenizer"]) : "";
  if (pre.empty())
    bad(path, "pre_tokenizer", "not Sequence[Digits(individual_digits), ByteLevel(add_prefix_space=false)] (smollm)");
  if (!m.contains("vocab") || !m["vocab"].is_object()) bad(path, "model.vocab", "missing or not an object");
  const json& vocab = m["vocab"];
  std::vector<std::string> tokens(vocab.size());
  std::vector<bool> seen(vocab.size(), false);
  for (const auto& [text, id] : vocab.items()) {
    if (!id.is_number_unsigned() || id.get<uint64_t>() >= tokens.size() || seen[id.get<uint64_t>()])
      bad(path, "model.vocab", "the ids are not 0..n-1, each once (at '" + text.substr(0, 60) + "')");
    seen[id.get<uint64_t>()] = true;
    tokens[id.get<uint64_t>()] = text;
  }
  std::vector<int32_t> types(tokens.size(), static_cast<int32_t>(TokenType::kNormal));
  if (j.contains("added_tokens") && j["added_tokens"].is_array()) {
    for (const json& a : j["added_tokens"]) {
      if (!a.is_object() || !a.contains("id") || !a["id"].is_number_unsigned() || !a.contains("content") ||
          !a["content"].is_string())
        bad(path, "added_tokens", "an entry without an integer id and a string content");
      const uint64_t id = a["id"].get<uint64_t>();
      if (id >= tokens.size() || tokens[id] != a["content"].get<std::string>())
        bad(path, "added_tokens", "'" + a["content"].get<std::string>().substr(0, 60) + "' is not model.vocab's token " +
                                      std::to_string(id));
      types[id] = static_cast<int32_t>(is(a, "special", true) ? TokenType::kControl : TokenType::kUserDefined);
    }
  }
  if (!m.contains("merges") || !m["merges"].is_array()) bad(path, "model.merges", "missing or not an array");
  std::vector<std::string> merges;
  merges.reserve(m["merges"].size());
  for (const json& e : m["merges"]) {
    if (e.is_string()) {
      merges.push_back(e.get<std::string>());
    } else if (e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_string()) {
      merges.push_back(e[0].get<std::string>() + " " + e[1].get<std::string>());
    } else {
      bad(path, "model.merges[" + std::to_string(merges.size()) + "]", "not \"LEFT RIGHT\" or [LEFT, RIGHT]");
    }
  }
  return BpeTokenizer(std::move(tokens), merges, std::move(types), pre, std::nullopt, std::nullopt, path);
}

}  // namespace akv::readers
