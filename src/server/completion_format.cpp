#include "server/completion_format.h"

namespace novaserve {
namespace {

size_t code_points(const std::string& s) {
  size_t n = 0;
  for (char c : s) n += (static_cast<uint8_t>(c) & 0xC0) != 0x80;
  return n;
}

}  // namespace

CompletionFormat::CompletionFormat(ResponseMeta meta, const Tokenizer& tok,
                                   std::vector<std::string> echo_texts, bool logprobs)
    : meta_(std::move(meta)), tok_(tok), echo_texts_(std::move(echo_texts)), logprobs_(logprobs) {
  for (const std::string& e : echo_texts_) echo_code_points_.push_back(code_points(e));
}

Json CompletionFormat::envelope() const {
  Json j = Json::object();
  j["id"] = meta_.id;
  j["object"] = "text_completion";
  j["created"] = meta_.created;
  j["model"] = meta_.model;
  return j;
}

Json CompletionFormat::logprobs_json(const std::vector<TokenEntry>& tokens, size_t i) const {
  if (!logprobs_) return nullptr;
  Json names = Json::array(), lps = Json::array(), tops = Json::array(), offsets = Json::array();
  const size_t shift = i < echo_code_points_.size() ? echo_code_points_[i] : 0;
  for (const TokenEntry& t : tokens) {
    names.push_back(token_display(tok_, t.token));
    lps.push_back(json_logprob(t.logprob));
    Json top = Json::object();
    for (const TokenLogprob& alt : t.top)
      top[token_display(tok_, alt.token)] = json_logprob(alt.logprob);
    tops.push_back(std::move(top));
    offsets.push_back(t.text_offset + shift);
  }
  Json j = Json::object();
  j["tokens"] = std::move(names);
  j["token_logprobs"] = std::move(lps);
  j["top_logprobs"] = std::move(tops);
  j["text_offset"] = std::move(offsets);
  return j;
}

std::optional<Json> CompletionFormat::stream_start(size_t i) const {
  if (i >= echo_texts_.size() || echo_texts_[i].empty()) return std::nullopt;
  ChoiceDelta d;
  d.text = echo_texts_[i];
  Json j = stream_chunk(i, d);
  j["choices"][0]["logprobs"] = nullptr;  // no prompt logprobs
  return j;
}

Json CompletionFormat::stream_chunk(size_t i, const ChoiceDelta& d) const {
  Json c = Json::object();
  c["index"] = i;
  c["text"] = d.text;
  c["logprobs"] = logprobs_json(d.tokens, i);
  c["finish_reason"] = finish_json(d.finish);
  Json j = envelope();
  j["choices"] = Json::array({std::move(c)});
  if (meta_.include_usage) j["usage"] = nullptr;
  return j;
}

Json CompletionFormat::usage_chunk(const Usage& usage) const {
  Json j = envelope();
  j["choices"] = Json::array();
  j["usage"] = usage.to_json();
  return j;
}

Json CompletionFormat::response(const std::vector<ChoiceStream>& choices,
                                const Usage& usage) const {
  Json arr = Json::array();
  for (size_t i = 0; i < choices.size(); ++i) {
    Json c = Json::object();
    c["index"] = i;
    c["text"] = (i < echo_texts_.size() ? echo_texts_[i] : std::string()) + choices[i].text();
    c["logprobs"] = logprobs_json(choices[i].tokens(), i);
    c["finish_reason"] = finish_json(choices[i].finish_reason());
    arr.push_back(std::move(c));
  }
  Json j = envelope();
  j["choices"] = std::move(arr);
  j["usage"] = usage.to_json();
  return j;
}

}  // namespace novaserve
