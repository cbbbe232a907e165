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

ChatFormat::ChatFormat(ResponseMeta meta, const Tokenizer& tok, bool logprobs)
    : meta_(std::move(meta)), tok_(tok), logprobs_(logprobs) {}

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

Json ChatFormat::chunk(size_t i, Json delta, Json logprobs,
                       const std::optional<FinishReason>& f) const {
  Json c = Json::object();
  c["index"] = i;
  c["delta"] = std::move(delta);
  c["logprobs"] = std::move(logprobs);
  c["finish_reason"] = finish_json(f);
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
    msg["content"] = choices[i].text();
    Json c = Json::object();
    c["index"] = i;
    c["message"] = std::move(msg);
    c["logprobs"] = logprobs_json(choices[i].tokens());
    c["finish_reason"] = finish_json(choices[i].finish_reason());
    arr.push_back(std::move(c));
  }
  Json j = envelope("chat.completion");
  j["choices"] = std::move(arr);
  j["usage"] = usage.to_json();
  return j;
}

}  // namespace novaserve
