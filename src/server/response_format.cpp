#include "server/response_format.h"

#include <chrono>
#include <cmath>
#include <random>

#include "common/utf8.h"
#include "tokenizer/tokenizer.h"

namespace novaserve {

Json Usage::to_json() const {
  Json u = Json::object();
  u["prompt_tokens"] = prompt_tokens;
  u["completion_tokens"] = completion_tokens;
  u["total_tokens"] = prompt_tokens + completion_tokens;
  return u;
}

std::string make_response_id(const char* prefix) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id(prefix);
  for (int half = 0; half < 2; ++half) {
    uint64_t r = rng();
    for (int i = 0; i < 16; ++i, r >>= 4) id += kHex[r & 15];
  }
  return id;
}

int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

const char* finish_reason_string(FinishReason f) {
  switch (f) {
    case FinishReason::kStop:
      return "stop";
    case FinishReason::kLength:
      return "length";
    case FinishReason::kAbort:
      return "abort";
    case FinishReason::kError:
      return "error";
  }
  return "error";
}

Json finish_json(const std::optional<FinishReason>& f) {
  if (!f) return nullptr;
  return finish_reason_string(*f);
}

std::string token_display(const Tokenizer& tok, int32_t id) {
  return utf8::sanitize(tok.token_to_piece(id, /*special=*/true));
}

double json_logprob(float lp) {
  return std::isfinite(lp) ? lp : -9999.0;
}

}  // namespace novaserve
