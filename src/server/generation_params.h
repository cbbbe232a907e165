// Request parameters shared by /v1/completions and /v1/chat/completions: length, sampling,
// penalties, stop conditions, n, streaming. Rules follow OpenAI's API reference and vLLM's
// request models (vllm/entrypoints/openai/protocol.py); docs/api.md lists each with its message.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/sampling_params.h"
#include "server/api_error.h"
#include "server/json_body.h"
#include "server/structured_output.h"

namespace novaserve {

/// Which endpoint a body was sent to (a few rules differ).
enum class ApiKind { kCompletions, kChat };

/// Limits of this server (OpenAI allows n up to 128; vLLM caps logprobs at 20).
inline constexpr int32_t kMaxN = 16;
inline constexpr int32_t kMaxStopStrings = 16;
inline constexpr int32_t kMaxLogprobs = 20;

/// Validated parameters common to both endpoints.
struct GenerationParams {
  std::optional<std::string> model;
  /// Validated; top_k normalized (-1 -> 0 = disabled; above the vocabulary -> n_vocab).
  SamplingParams sampling;
  /// >= 1 when present. Chat: max_completion_tokens, else the deprecated max_tokens.
  std::optional<int64_t> max_tokens;
  int32_t min_tokens = 0;  ///< in [0, max_tokens]
  bool ignore_eos = false;
  std::vector<std::string> stop;        ///< non-empty strings, at most kMaxStopStrings
  std::vector<int32_t> stop_token_ids;  ///< vLLM extension; ids in the vocabulary
  int32_t n = 1;                        ///< in [1, kMaxN]
  bool stream = false;
  bool include_usage = false;  ///< stream_options.include_usage
  int32_t priority = 0;        ///< vLLM: lower runs first
  /// vLLM's truncate_prompt_tokens: keep only the last k prompt tokens (k >= 1).
  std::optional<int64_t> truncate_prompt_tokens;
  std::optional<std::string> user;
  /// response_format / json_schema / grammar / guided_* / structured_outputs (at most one).
  std::optional<OutputConstraint> constraint;
};

/// Parses the shared fields of `body` (a JSON object). `n_vocab` bounds token ids (logit_bias,
/// stop_token_ids) and clamps top_k. Returns the first rule broken, as a 400 naming the param.
std::optional<ApiError> parse_generation_params(const Json& body, ApiKind kind, int32_t n_vocab,
                                                GenerationParams& out);

}  // namespace novaserve
