// One choice's reply read as text and tool calls while it streams: content is released as soon
// as no call can start in it, a call is held until the reply ends and then parsed whole.
#pragma once

#include <string>
#include <string_view>

#include "server/tool_call_parser.h"

namespace novaserve {

/// How a reply carries its calls.
enum class ToolReplyShape {
  kNone,       ///< no tools in play: all text is content
  kFamily,     ///< the model family's syntax (tool_choice auto), read by a ToolParser
  kArguments,  ///< the whole reply is the arguments object of one named function (grammar-forced)
  kCallArray,  ///< the whole reply is [{"name": ..., "parameters": {...}}, ...] (grammar-forced)
};

class ToolCallStream {
 public:
  /// `named`: the function of kArguments. `parser`: kFamily's syntax (ids use its format too).
  /// `parallel` false (parallel_tool_calls): a reply keeps only its first call.
  ToolCallStream(ToolReplyShape shape, ToolParser parser, std::string named, bool parallel = true);

  /// Adds released reply text; returns the content that may be sent now.
  std::string push(std::string_view text);

  /// Ends the reply: the content not yet returned by push() and the calls.
  ParsedReply finish();

  /// True once a call has begun (so far all text after it is held back).
  bool call_started() const { return call_started_; }

 private:
  ToolReplyShape shape_;
  ToolParser parser_;
  std::string named_;
  bool parallel_;
  std::string text_;
  size_t sent_ = 0;  // bytes of text_ returned as content
  bool call_started_ = false;
};

}  // namespace novaserve
