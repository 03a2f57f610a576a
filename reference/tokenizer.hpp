// The fixture tokenizer (spec/model.md M5): UTF-8 bytes are tokens 0..255; specials follow.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "reference/config.hpp"

namespace akv::tok {

inline constexpr Token kSystem = 256;     // <|system|>    opens a system message
inline constexpr Token kUser = 257;       // <|user|>
inline constexpr Token kAssistant = 258;  // <|assistant|>
inline constexpr Token kTool = 259;       // <|tool|>      opens a tool result
inline constexpr Token kEnd = 260;        // <|end|>       closes every message
inline constexpr Token kCall = 261;       // <|call|>      starts a tool call: name follows
inline constexpr Token kArgs = 262;       // <|args|>      the call's JSON arguments follow
inline constexpr Token kId = 263;         // <|id|>        a tool-call id follows
inline constexpr Token kResult = 264;     // <|result|>    a tool result's content follows
inline constexpr Token kDeveloper = 265;  // <|developer|> opens a developer message (IN1)
inline constexpr Token kFunction = 266;   // <|function|>  opens a legacy function result
inline constexpr Token kName = 267;       // <|name|>      the author's name follows
inline constexpr Token kRefusal = 268;    // <|refusal|>   an assistant's refusal text follows
inline constexpr Token kInput = 269;      // <|input|>     a custom tool call's input follows
inline constexpr Token kTools = 270;      // <|tools|>     opens the request's tool definitions (IN10)
inline constexpr Token kFirstReserved = 271;  // 271..vocab-1: reserved, valid, never emitted

/// Appends the UTF-8 bytes of `s` as tokens 0..255.
void append_bytes(std::vector<Token>& out, std::string_view s);

/// Readable text of tokens: bytes as they are, specials as "<|name|>", reserved as "<|rN|>".
std::string render(const std::vector<Token>& tokens);

}  // namespace akv::tok
