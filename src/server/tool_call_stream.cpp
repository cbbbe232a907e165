#include "server/tool_call_stream.h"

#include "server/json_body.h"

namespace novaserve {

ToolCallStream::ToolCallStream(ToolReplyShape shape, ToolParser parser, std::string named,
                               bool parallel)
    : shape_(shape), parser_(parser), named_(std::move(named)), parallel_(parallel) {}

std::string ToolCallStream::push(std::string_view text) {
  text_.append(text);
  if (shape_ == ToolReplyShape::kNone) {
    sent_ = text_.size();
    return std::string(text);
  }
  if (shape_ != ToolReplyShape::kFamily || call_started_) return {};
  const size_t safe = tool_content_prefix(parser_, text_, call_started_);
  if (safe <= sent_) return {};
  std::string out = text_.substr(sent_, safe - sent_);
  sent_ = safe;
  return out;
}

ParsedReply ToolCallStream::finish() {
  ParsedReply reply;
  switch (shape_) {
    case ToolReplyShape::kNone:
      reply.content = text_;
      break;
    case ToolReplyShape::kFamily:
      reply = parse_tool_reply(parser_, text_);
      break;
    case ToolReplyShape::kArguments: {
      ToolCall call;
      call.id = make_tool_call_id(parser_);
      call.name = named_;
      // Cut short (finish_reason length), the arguments stay the text that was generated.
      auto parsed = parse_json_object(text_);
      call.arguments = parsed.ok() ? dump_json(parsed.value()) : text_;
      reply.calls.push_back(std::move(call));
      break;
    }
    case ToolReplyShape::kCallArray: {
      const std::string wrapped = "[TOOL_CALLS]" + text_;
      reply = parse_tool_reply(ToolParser::kMistral, wrapped);
      if (reply.calls.empty()) {
        reply.content = text_;
      } else {
        for (ToolCall& c : reply.calls) c.id = make_tool_call_id(parser_);
      }
      break;
    }
  }
  // A family's syntax allows more calls than the grammar can forbid (each opens with a free
  // marker): with parallel_tool_calls false the first one is the answer.
  if (!parallel_ && reply.calls.size() > 1) reply.calls.resize(1);
  // What push() already released is not repeated.
  reply.content = reply.content.size() > sent_ ? reply.content.substr(sent_) : std::string();
  return reply;
}

}  // namespace novaserve
