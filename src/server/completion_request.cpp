#include "server/completion_request.h"

#include "server/json_fields.h"

namespace novaserve {
namespace {

constexpr char kPromptForms[] =
    "a string, an array of strings, an array of token ids or an array of token-id arrays";

std::optional<ApiError> token_ids(const Json& arr, int32_t n_vocab, std::vector<int32_t>& out) {
  for (const Json& v : arr) {
    const auto id = v.is_number() ? json_integer(v) : std::nullopt;
    if (!id) {
      return invalid_request(std::string("prompt must be ") + kPromptForms + "; found " +
                                 v.type_name() + " among token ids",
                             "prompt");
    }
    if (*id < 0 || *id >= n_vocab) {
      return invalid_request("prompt token id " + std::to_string(*id) +
                                 " is outside the vocabulary [0, " + std::to_string(n_vocab) + ")",
                             "prompt");
    }
    out.push_back(static_cast<int32_t>(*id));
  }
  return std::nullopt;
}

std::optional<ApiError> parse_prompt(const Json& body, int32_t n_vocab,
                                     std::vector<PromptInput>& out) {
  const FieldReader f(body);
  const Json* p = f.find("prompt");
  if (p == nullptr) return invalid_request("prompt is required", "prompt");
  const ApiError empty = invalid_request("prompt must not be empty", "prompt");
  if (p->is_string()) {
    if (p->get_ref<const std::string&>().empty()) return empty;
    out.push_back({p->get<std::string>(), {}});
    return std::nullopt;
  }
  if (!p->is_array()) return f.type_error("prompt", kPromptForms, *p);
  if (p->empty()) return empty;
  const Json& first = p->front();
  if (first.is_number()) {
    PromptInput in;
    if (auto e = token_ids(*p, n_vocab, in.ids)) return e;
    out.push_back(std::move(in));
    return std::nullopt;
  }
  if (p->size() > kMaxBatchPrompts) {
    return invalid_request("prompt may hold at most " + std::to_string(kMaxBatchPrompts) +
                               " prompts, got " + std::to_string(p->size()),
                           "prompt");
  }
  for (const Json& item : *p) {
    if (first.is_string() && item.is_string()) {
      if (item.get_ref<const std::string&>().empty()) return empty;
      out.push_back({item.get<std::string>(), {}});
    } else if (first.is_array() && item.is_array()) {
      if (item.empty()) return empty;
      PromptInput in;
      if (auto e = token_ids(item, n_vocab, in.ids)) return e;
      out.push_back(std::move(in));
    } else {
      return invalid_request(std::string("prompt must be ") + kPromptForms + "; found " +
                                 item.type_name() + " in the array",
                             "prompt");
    }
  }
  return std::nullopt;
}

}  // namespace

ApiResult<CompletionRequest> parse_completion_request(const Json& body, int32_t n_vocab) {
  CompletionRequest req;
  if (auto e = parse_generation_params(body, ApiKind::kCompletions, n_vocab, req.gen)) return *e;
  const FieldReader f(body);
  std::optional<bool> echo;
  if (auto e = f.get_bool("echo", echo)) return *e;
  req.echo = echo.value_or(false);
  std::optional<int64_t> logprobs;
  if (auto e = f.get_int("logprobs", logprobs)) return *e;
  if (logprobs) {
    if (*logprobs < 0 || *logprobs > kMaxLogprobs) {
      return out_of_range("logprobs", "in [0, " + std::to_string(kMaxLogprobs) + "]", *logprobs);
    }
    req.logprobs = static_cast<int32_t>(*logprobs);
  }
  if (req.echo && req.logprobs >= 0) {
    return invalid_request(
        "echo with logprobs needs prompt logprobs, which this server does not compute", "echo");
  }
  std::optional<std::string> suffix;
  if (auto e = f.get_string("suffix", suffix)) return *e;
  if (suffix && !suffix->empty()) return invalid_request("suffix is not supported", "suffix");
  if (auto e = parse_prompt(body, n_vocab, req.prompts)) return *e;
  return req;
}

}  // namespace novaserve
