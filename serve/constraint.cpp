#include "serve/constraint.hpp"

#include <nlohmann/json.hpp>

namespace akv::serve {

std::optional<chat::Grammar> request_grammar(const ChatRequest& q, ToolSyntax syntax, const chat::GrammarVocabulary& vocab) {
  using Json = nlohmann::ordered_json;
  if (q.response_format == ResponseFormat::kJsonObject) return chat::Grammar::json_object(vocab);
  if (q.response_format == ResponseFormat::kJsonSchema)
    return chat::Grammar::json_schema(vocab, Json::parse(q.json_schema), "response_format.json_schema.schema");
  if (q.conv.tools.empty() || q.tool_choice == ToolChoice::kNone || syntax == ToolSyntax::kNone) return std::nullopt;
  std::vector<chat::ToolSchema> tools;
  for (size_t i = 0; i < q.conv.tools.size(); ++i) {
    const ToolDef& t = q.conv.tools[i];
    if (q.tool_choice == ToolChoice::kNamed && t.name != q.tool_choice_name) continue;
    tools.push_back({t.name, t.parameters.empty() ? Json() : Json::parse(t.parameters), "tools[" + std::to_string(i) + "].function"});
  }
  chat::ToolCallOptions o;
  o.syntax = syntax == ToolSyntax::kLlamaJson ? chat::ToolCallSyntax::kLlama31 : chat::ToolCallSyntax::kHermes;
  o.required = q.tool_choice != ToolChoice::kAuto;
  o.parallel = q.parallel_tool_calls && q.tool_choice != ToolChoice::kNamed;
  return chat::Grammar::tool_calls(vocab, tools, o);
}

}  // namespace akv::serve
