#include "server/chat_format.h"

#include "tokenizer/tokenizer.h"

namespace novaserve {
namespace {

Json bytes_json(const std::string& piece) {
  Json b = Json::array();
  for (char c : piece) b.push_back(static_cast<uint8_t>(c));
  return b;
}

}  // namespace

Json tool_calls_json(const std::vector<ToolCall>& calls, bool with_index) {
  Json arr = Json::array();
  for (size_t k = 0; k < calls.size(); ++k) {
    Json c = Json::object();
    if (with_index) c["index"] = k;
    c["id"] = calls[k].id;
    c["type"] = "function";
    c["function"] = Json::object({{"name", calls[k].name}, {"arguments", calls[k].arguments}});
    arr.push_back(std::move(c));
  }
  return arr;
}

ChatFormat::ChatFormat(ResponseMeta meta, const Tokenizer& tok, bool logprobs, size_t n,
                       ToolReplyConfig tools)
    : meta_(std::move(meta)), tok_(tok), logprobs_(logprobs), tools_(std::move(tools)) {
  for (size_t i = 0; i < n; ++i)
    streams_.emplace_back(tools_.shape, tools_.parser, tools_.named, tools_.parallel);
}

Json ChatFormat::envelope(const char* object) const {
  Json j = Json::object();
  j["id"] = meta_.id;
  j["object"] = object;
  j["created"] = meta_.created;
  j["model"] = meta_.model;
  return j;
}

Json ChatFormat::logprobs_json(const std::vector<TokenEntry>& tokens) const {
  if (!logprobs_) return nullptr;
  auto entry = [&](int32_t id, float lp) {
    Json e = Json::object();
    e["token"] = token_display(tok_, id);
    e["logprob"] = json_logprob(lp);
    e["bytes"] = bytes_json(tok_.token_to_piece(id, /*special=*/true));
    return e;
  };
  Json content = Json::array();
  for (const TokenEntry& t : tokens) {
    Json e = entry(t.token, t.logprob);
    Json top = Json::array();
    for (const TokenLogprob& alt : t.top) top.push_back(entry(alt.token, alt.logprob));
    e["top_logprobs"] = std::move(top);
    content.push_back(std::move(e));
  }
  Json j = Json::object();
  j["content"] = std::move(content);
  j["refusal"] = nullptr;
  return j;
}

Json ChatFormat::chunk(size_t i, Json delta, Json logprobs, const std::optional<FinishReason>& f,
                       bool tool_calls) const {
  Json c = Json::object();
  c["index"] = i;
  c["delta"] = std::move(delta);
  c["logprobs"] = std::move(logprobs);
  c["finish_reason"] = tool_calls && f == FinishReason::kStop ? Json("tool_calls") : finish_json(f);
  Json j = envelope("chat.completion.chunk");
  j["choices"] = Json::array({std::move(c)});
  if (meta_.include_usage) j["usage"] = nullptr;
  return j;
}

std::optional<Json> ChatFormat::stream_start(size_t i) const {
  Json delta = Json::object();
  delta["role"] = "assistant";
  delta["content"] = "";
  return chunk(i, std::move(delta), nullptr, std::nullopt);
}

Json ChatFormat::stream_chunk(size_t i, const ChoiceDelta& d) const {
  Json delta = Json::object();
  if (!d.text.empty() || !d.finish) delta["content"] = d.text;
  return chunk(i, std::move(delta), d.tokens.empty() ? Json(nullptr) : logprobs_json(d.tokens),
               d.finish);
}

std::vector<Json> ChatFormat::stream_chunks(size_t i, const ChoiceDelta& d) {
  if (tools_.shape == ToolReplyShape::kNone || i >= streams_.size()) return {stream_chunk(i, d)};
  ToolCallStream& s = streams_[i];
  std::vector<Json> out;
  const Json lp = d.tokens.empty() ? Json(nullptr) : logprobs_json(d.tokens);
  std::string content = s.push(d.text);
  if (!d.finish) {
    if (!content.empty() || !lp.is_null()) {
      out.push_back(chunk(i, Json::object({{"content", std::move(content)}}), lp, std::nullopt));
    }
    return out;
  }
  ParsedReply reply = s.finish();
  content += reply.content;
  if (!content.empty()) {
    out.push_back(chunk(i, Json::object({{"content", std::move(content)}}), lp, std::nullopt));
  }
  for (size_t k = 0; k < reply.calls.size(); ++k) {
    Json call = tool_calls_json({reply.calls[k]}, true)[0];
    call["index"] = k;
    out.push_back(
        chunk(i, Json::object({{"tool_calls", Json::array({std::move(call)})}}), nullptr, {}));
  }
  out.push_back(chunk(i, Json::object(), content.empty() && !lp.is_null() ? lp : Json(nullptr),
                      d.finish, !reply.calls.empty()));
  return out;
}

Json ChatFormat::usage_chunk(const Usage& usage) const {
  Json j = envelope("chat.completion.chunk");
  j["choices"] = Json::array();
  j["usage"] = usage.to_json();
  return j;
}

Json ChatFormat::response(const std::vector<ChoiceStream>& choices, const Usage& usage) const {
  Json arr = Json::array();
  for (size_t i = 0; i < choices.size(); ++i) {
    Json msg = Json::object();
    msg["role"] = "assistant";
    ParsedReply reply;
    if (tools_.shape == ToolReplyShape::kNone) {
      reply.content = choices[i].text();
    } else {
      ToolCallStream s(tools_.shape, tools_.parser, tools_.named, tools_.parallel);
      std::string head = s.push(choices[i].text());
      reply = s.finish();
      reply.content = head + reply.content;
    }
    const bool calls = !reply.calls.empty();
    // OpenAI sends null content beside calls when the model wrote no text.
    msg["content"] = calls && reply.content.empty() ? Json(nullptr) : Json(reply.content);
    if (calls) msg["tool_calls"] = tool_calls_json(reply.calls, false);
    Json c = Json::object();
    c["index"] = i;
    c["message"] = std::move(msg);
    c["logprobs"] = logprobs_json(choices[i].tokens());
    const auto f = choices[i].finish_reason();
    c["finish_reason"] = calls && f == FinishReason::kStop ? Json("tool_calls") : finish_json(f);
    arr.push_back(std::move(c));
  }
  Json j = envelope("chat.completion");
  j["choices"] = std::move(arr);
  j["usage"] = usage.to_json();
  return j;
}

}  // namespace novaserve
