#include "verify/gen/real.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "readers/conversation/chat_parse.hpp"
#include "reference/chat.hpp"

namespace akv::gen {

std::string examples_dir() {
  if (const char* d = std::getenv("AKV_EXAMPLES")) return d;
  return std::string(AKV_SOURCE_DIR) + "/examples/conversations";
}

namespace {
Role role_of(const std::string& r) {
  if (r == "system") return Role::kSystem;
  if (r == "assistant") return Role::kAssistant;
  if (r == "tool") return Role::kTool;
  return Role::kUser;
}

std::vector<GenConversation> load_all() {
  namespace fs = std::filesystem;
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(examples_dir(), ec))
    if (e.path().extension() == ".json") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  std::vector<GenConversation> out;
  for (const std::string& f : files) {
    GenConversation c;
    for (const Message& m : load_conversation(f).messages) c.spans.push_back({role_of(m.role), encode_message(m)});
    out.push_back(std::move(c));
  }
  return out;
}
}  // namespace

const std::vector<GenConversation>& real_conversations() {
  static const std::vector<GenConversation> all = load_all();
  return all;
}

}  // namespace akv::gen
