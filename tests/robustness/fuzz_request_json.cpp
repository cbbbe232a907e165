// libFuzzer target: arbitrary bytes as the body of /v1/completions, /v1/chat/completions and the
// messages of /apply-template (structured-output fields and tools included). Parsing must never
// crash, hang or leak; an accepted request must satisfy the engine's own SamplingParams::validate
// and the documented bounds; every error must be a 4xx whose OpenAI error object serializes.
//
// CMake links this target with the engine and chat layers only (not novaserve_server), so the
// request-parsing sources (which need nothing above those and nlohmann-json) are compiled into
// it directly, where libFuzzer's coverage instrumentation sees them.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "server/api_error.cpp"
#include "server/chat_request.cpp"
#include "server/completion_request.cpp"
#include "server/generation_params.cpp"
#include "server/json_body.cpp"
#include "server/json_fields.cpp"
#include "server/structured_output.cpp"
#include "server/tool_request.cpp"

namespace {

constexpr int32_t kVocab = 1000;

void check_error(const novaserve::ApiError& e) {
  if (e.status < 400 || e.status >= 500 || e.message.empty()) std::abort();
  (void)novaserve::dump_json(e.to_json());
}

void check_generation(const novaserve::GenerationParams& g) {
  if (!g.sampling.validate(kVocab).ok()) std::abort();
  if (g.n < 1 || g.n > novaserve::kMaxN) std::abort();
  if (g.stop.size() > static_cast<size_t>(novaserve::kMaxStopStrings)) std::abort();
  if (g.max_tokens && *g.max_tokens < 1) std::abort();
  if (g.min_tokens < 0) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  auto json = novaserve::parse_json_object(body);
  if (!json.ok()) {
    check_error(json.error());
    return 0;
  }
  auto completion = novaserve::parse_completion_request(json.value(), kVocab);
  if (completion.ok()) {
    check_generation(completion->gen);
    if (completion->prompts.empty() || completion->logprobs > novaserve::kMaxLogprobs) std::abort();
  } else {
    check_error(completion.error());
  }
  auto chat = novaserve::parse_chat_request(json.value(), kVocab);
  if (chat.ok()) {
    check_generation(chat->gen);
    if (!chat->messages.is_array() || chat->messages.empty()) std::abort();
    (void)novaserve::dump_json(chat->messages);
  } else {
    check_error(chat.error());
  }
  return 0;
}
