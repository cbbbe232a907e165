// Reading tool calls back out of generated text, per model family. Each family's chat template
// teaches the model its own call syntax; the parser names follow vLLM's --tool-call-parser:
//   llama3_json  Llama 3.1-3.3: the whole reply is {"name": ..., "parameters": {...}} (several
//                joined by ";"), optionally after <|python_tag|> (Meta's llama3.1 prompt format)
//   hermes       Hermes 2 Pro / 3, Qwen2.5, Qwen3: <tool_call>{"name": ..., "arguments": {...}}
//                </tool_call>, repeated for parallel calls, text around them is content
//   mistral      Mistral / Mixtral / Nemo: [TOOL_CALLS] [{"name": ..., "arguments": {...}}, ...]
//                or the v11 tokenizer's [TOOL_CALLS]name[ARGS]{...}
// docs/structured-outputs.md ("Tool calling") lists the templates each one serves.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace novaserve {

enum class ToolParser { kLlama3Json, kHermes, kMistral };

/// "llama3_json" (alias "llama3"), "hermes" (aliases "qwen", "qwen2_5"), "mistral"; nullopt for
/// anything else.
std::optional<ToolParser> tool_parser_from_name(std::string_view name);
const char* tool_parser_name(ToolParser p);

/// The parser for a chat template, from the call syntax its source teaches: "[TOOL_CALLS]" ->
/// mistral, "<tool_call>" -> hermes, "<|python_tag|>" or an "ipython" role -> llama3_json.
/// Templates that show none (ChatML models without tool support, such as SmolLM2) get hermes,
/// the syntax ChatML-family models are tuned on (Qwen2.5, Hermes).
ToolParser detect_tool_parser(std::string_view template_source);

/// One call as the response reports it: `arguments` is compact JSON text (an object).
struct ToolCall {
  std::string id;
  std::string name;
  std::string arguments;
};

/// A reply split into text and calls.
struct ParsedReply {
  std::string content;  ///< the text that is not part of a call (may be empty)
  std::vector<ToolCall> calls;
};

/// Splits `text` (a whole reply, special tokens included as text) with `p`. A reply whose call
/// syntax does not parse (cut short, invalid JSON, no "name") is all content, with no calls:
/// a client then sees what the model said instead of a call the model did not make.
/// Ids are fresh: "call_" + 24 hex digits, or 9 alphanumerics for mistral (its templates
/// insist on that length when the id comes back in a later turn).
ParsedReply parse_tool_reply(ToolParser p, std::string_view text);

/// For streaming: the length of the prefix of `text` (the reply so far) that is content for
/// sure. Sets `call_started` once a call's opening syntax is in `text` (everything from the
/// returned offset on then waits for the end of the reply). A tail that could still grow into an
/// opening marker is held back.
size_t tool_content_prefix(ToolParser p, std::string_view text, bool& call_started);

/// A fresh call id for `p` (see parse_tool_reply).
std::string make_tool_call_id(ToolParser p);

/// The end (one past the closing bracket) of the JSON object or array that starts at `pos` in
/// `text`, found by bracket matching outside strings; nullopt when it does not close, or nests
/// deeper than `max_depth`.
std::optional<size_t> json_value_end(std::string_view text, size_t pos, int max_depth);

}  // namespace novaserve
