#include "serve/audit_chain.hpp"

#include <fmt/format.h>
#include <openssl/pem.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "readers/json_limited.hpp"
#include "reference/error.hpp"
#include "serve/api_error.hpp"
#include "runtime/digest.hpp"

namespace akv::serve {
namespace {
using json = nlohmann::json;

std::string hex(const unsigned char* p, size_t n) {
  static const char* d = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) s += d[p[i] >> 4], s += d[p[i] & 15];
  return s;
}

bool unhex(const std::string& s, std::vector<unsigned char>& out) {
  if (s.size() % 2) return false;
  out.clear();
  for (size_t i = 0; i < s.size(); i += 2) {
    auto v = [](char c) { return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1; };
    const int a = v(s[i]), b = v(s[i + 1]);
    if (a < 0 || b < 0) return false;
    out.push_back(static_cast<unsigned char>(a * 16 + b));
  }
  return true;
}

std::string public_hex(EVP_PKEY* k) {
  unsigned char raw[32];
  size_t n = sizeof raw;
  if (EVP_PKEY_get_raw_public_key(k, raw, &n) != 1 || n != 32) return "";
  return hex(raw, n);
}

// The line's bytes as signed: the text with its last member `,"sig":"<128 hex>"` taken out.
bool signed_bytes(const std::string& text, std::string& out, std::string& sig) {
  const std::string tag = ",\"sig\":\"";
  const size_t at = text.rfind(tag);
  if (at == std::string::npos || text.size() != at + tag.size() + 128 + 2 || text.compare(text.size() - 2, 2, "\"}") != 0) return false;
  sig = text.substr(at + tag.size(), 128);
  out = text.substr(0, at) + "}";
  return true;
}

// An audit line's JSON (the limits of akv audit's reader, spec/input.md IN3).
constexpr readers::JsonLimits kLine{size_t{256} << 20, 16, "spec/input.md IN3"};
}  // namespace

std::string ed25519_public_key_hex(const std::string& pem_file) {
  FILE* f = std::fopen(pem_file.c_str(), "rb");
  if (f == nullptr) throw Error(ErrorCode::kBadInput, pem_file + ": cannot read the key file");
  EVP_PKEY* k = PEM_read_PrivateKey(f, nullptr, nullptr, nullptr);
  if (k == nullptr) {
    std::rewind(f);
    k = PEM_read_PUBKEY(f, nullptr, nullptr, nullptr);
  }
  std::fclose(f);
  if (k == nullptr || EVP_PKEY_id(k) != EVP_PKEY_ED25519) {
    EVP_PKEY_free(k);
    throw Error(ErrorCode::kBadInput, pem_file + ": not a PEM Ed25519 key (make one with: openssl genpkey -algorithm ed25519 -out KEY.pem)");
  }
  const std::string h = public_hex(k);
  EVP_PKEY_free(k);
  return h;
}

AuditChainWriter::AuditChainWriter(std::string path, const std::string& key_file) : path_(std::move(path)) {
  if (!key_file.empty()) {
    FILE* f = std::fopen(key_file.c_str(), "rb");
    if (f == nullptr) throw Error(ErrorCode::kBadInput, "--audit-key " + key_file + ": cannot read");
    key_ = PEM_read_PrivateKey(f, nullptr, nullptr, nullptr);
    std::fclose(f);
    if (key_ == nullptr || EVP_PKEY_id(key_) != EVP_PKEY_ED25519) {
      EVP_PKEY_free(key_);
      key_ = nullptr;
      throw Error(ErrorCode::kBadInput,
                  "--audit-key " + key_file + ": not a PEM Ed25519 private key (make one with: openssl genpkey -algorithm ed25519 -out KEY.pem)");
    }
    pub_hex_ = public_hex(key_);
  }
  // The chain goes on from the log's last complete line (of a regular file: a device such as
  // /dev/full is written, never read).
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path_, ec)) return;
  std::ifstream in(path_, std::ios::binary);
  if (!in) return;
  const std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t end = all.rfind('\n');  // the end of the last complete line; a cut one after it is left out
  if (end == std::string::npos) return;
  const size_t before = end == 0 ? std::string::npos : all.rfind('\n', end - 1);
  const size_t start = before == std::string::npos ? 0 : before + 1;
  const std::string last = all.substr(start, end - start);
  if (last.empty()) return;
  json j;
  try {
    j = readers::parse_json_limited(last, kLine, {ErrorCode::kBadInput, "audit line"});
  } catch (const std::exception& e) {
    throw Error(ErrorCode::kBadInput, "--audit-log " + path_ + ": its last line is not an audit line (" + e.what() + ")");
  }
  if (!j.is_object() || !j.contains("seq") || !j["seq"].is_number_unsigned())
    throw Error(ErrorCode::kBadInput, "--audit-log " + path_ + ": its last line has no chain fields (a log of an older akv: start a new file)");
  seq_ = j["seq"].get<uint64_t>();
  prev_ = sha256_hex(last);
  // The log goes on signed as it began, by the same key: a switch would make it unverifiable.
  const std::string logged_key = j.contains("key") && j["key"].is_string() ? j["key"].get<std::string>() : "";
  if (logged_key != pub_hex_)
    throw Error(ErrorCode::kBadInput, "--audit-log " + path_ + ": its lines are " +
                                          (logged_key.empty() ? std::string("not signed") : "signed by key " + logged_key.substr(0, 16) + "…") +
                                          (pub_hex_.empty() ? ", and no --audit-key is given" : ", and --audit-key is key " + pub_hex_.substr(0, 16) + "…") +
                                          ": start a new log, or give the same key");
}

AuditChainWriter::~AuditChainWriter() { EVP_PKEY_free(key_); }

void AuditChainWriter::append(json line) {
  std::lock_guard lk(mu_);
  line["seq"] = seq_ + 1;
  line["prev_sha256"] = prev_;
  if (key_ != nullptr) line["key"] = pub_hex_;
  std::string text = line.dump(-1, ' ', false, json::error_handler_t::replace);
  if (key_ != nullptr) {
    unsigned char sig[64];
    size_t n = sizeof sig;
    EVP_MD_CTX* ctx = EVP_MD_CTX_new();
    const bool ok = ctx != nullptr && EVP_DigestSignInit(ctx, nullptr, nullptr, nullptr, key_) == 1 &&
                    EVP_DigestSign(ctx, sig, &n, reinterpret_cast<const unsigned char*>(text.data()), text.size()) == 1 && n == 64;
    EVP_MD_CTX_free(ctx);
    if (!ok) throw audit_log_failed("--audit-log " + path_ + ": the Ed25519 signature failed");
    text.pop_back();  // the closing brace: the signature is the last member
    text += ",\"sig\":\"" + hex(sig, n) + "\"}";
  }
  // Created readable by its owner only: it holds every request's bytes.
  const int fd = ::open(path_.c_str(), O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  FILE* f = fd < 0 ? nullptr : ::fdopen(fd, "a+b");
  if (f == nullptr) {
    if (fd >= 0) ::close(fd);
    throw audit_log_failed("--audit-log " + path_ + ": cannot open for append");
  }
  // A log whose last line a kill cut (no newline): this line starts on a line of its own.
  bool cut = false;
  if (std::fseek(f, -1, SEEK_END) == 0) cut = std::fgetc(f) != '\n';
  std::fseek(f, 0, SEEK_END);
  const std::string out = (cut ? "\n" : "") + text + "\n";
  const bool ok = std::fwrite(out.data(), 1, out.size(), f) == out.size() && std::fflush(f) == 0 && fsync(fileno(f)) == 0;
  std::fclose(f);
  if (!ok) throw audit_log_failed("--audit-log " + path_ + ": the write failed (disk full?)");
  ++seq_;
  prev_ = sha256_hex(text);
}

std::string check_chain_line(const std::string& text, const json& line, uint64_t seq, const std::string& prev, const std::string& pinned_key,
                             bool signed_log) {
  if (!line.contains("seq") || !line["seq"].is_number_unsigned() || !line.contains("prev_sha256") || !line["prev_sha256"].is_string())
    return "no chain fields (seq, prev_sha256): not written by this akv, or edited";
  if (line["seq"].get<uint64_t>() != seq)
    return fmt::format("seq {} where {} was due: a line before it was deleted, or lines were reordered", line["seq"].get<uint64_t>(), seq);
  if (line["prev_sha256"] != prev) return "prev_sha256 is not the SHA-256 of the line before: that line was edited, deleted or moved";
  const bool has_sig = line.contains("sig");
  if (has_sig != signed_log) return has_sig ? "signed in a log whose first line is not" : "not signed in a signed log";
  if (!has_sig) return "";
  if (!line.contains("key") || !line["key"].is_string()) return "signed but names no key";
  const std::string key = line["key"].get<std::string>();
  if (!pinned_key.empty() && key != pinned_key)
    return "signed by key " + key.substr(0, 16) + "…, not " + pinned_key.substr(0, 16) + "… (the pinned key, or the first line's)";
  std::string bytes, sig_hex;
  std::vector<unsigned char> raw, sig;
  if (!signed_bytes(text, bytes, sig_hex) || !unhex(sig_hex, sig) || !unhex(key, raw) || raw.size() != 32) return "the signature or key is malformed";
  EVP_PKEY* k = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nullptr, raw.data(), raw.size());
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  const bool ok = k != nullptr && ctx != nullptr && EVP_DigestVerifyInit(ctx, nullptr, nullptr, nullptr, k) == 1 &&
                  EVP_DigestVerify(ctx, sig.data(), sig.size(), reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size()) == 1;
  EVP_MD_CTX_free(ctx);
  EVP_PKEY_free(k);
  return ok ? "" : "the Ed25519 signature does not verify: the line was edited";
}

}  // namespace akv::serve
