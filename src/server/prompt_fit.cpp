#include "server/prompt_fit.h"

#include <string>

namespace novaserve {
namespace {

ApiError context_error(std::string message, const char* param) {
  ApiError e = invalid_request(std::move(message), param);
  e.code = "context_length_exceeded";
  return e;
}

}  // namespace

ApiResult<int32_t> fit_prompt(std::vector<int32_t>& prompt, const GenerationParams& gen,
                              int32_t context_length, int64_t default_max_tokens,
                              const char* prompt_param) {
  const std::string ctx = std::to_string(context_length);
  if (gen.truncate_prompt_tokens) {
    const int64_t k = *gen.truncate_prompt_tokens;
    if (k > context_length) {
      return invalid_request("truncate_prompt_tokens (" + std::to_string(k) +
                                 ") must not exceed the model's context length (" + ctx + ")",
                             "truncate_prompt_tokens");
    }
    if (static_cast<int64_t>(prompt.size()) > k) {
      prompt.erase(prompt.begin(), prompt.end() - k);  // keep the last k tokens, as vLLM does
    }
  }
  if (prompt.empty()) {
    return invalid_request(std::string(prompt_param) + " is empty after tokenization",
                           prompt_param);
  }
  const int64_t p = static_cast<int64_t>(prompt.size());
  if (p >= context_length) {
    return context_error("This model's maximum context length is " + ctx +
                             " tokens. However, your prompt has " + std::to_string(p) +
                             " tokens, which leaves no room for the completion. Shorten the " +
                             prompt_param + " or set truncate_prompt_tokens.",
                         prompt_param);
  }
  const int64_t room = context_length - p;
  int64_t max_tokens = 0;
  if (gen.max_tokens) {
    max_tokens = *gen.max_tokens;
    if (max_tokens > room) {
      return context_error("This model's maximum context length is " + ctx +
                               " tokens. However, you requested " + std::to_string(p + max_tokens) +
                               " tokens (" + std::to_string(p) + " in the prompt, " +
                               std::to_string(max_tokens) +
                               " for the completion). Reduce the prompt or max_tokens.",
                           "max_tokens");
    }
  } else {
    max_tokens = default_max_tokens < 0 ? room : std::min(default_max_tokens, room);
  }
  if (gen.min_tokens > max_tokens) {
    return context_error("min_tokens (" + std::to_string(gen.min_tokens) + ") exceeds the " +
                             std::to_string(max_tokens) + " tokens this prompt leaves in the " +
                             ctx + "-token context",
                         "min_tokens");
  }
  return static_cast<int32_t>(max_tokens);
}

}  // namespace novaserve
