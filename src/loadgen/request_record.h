// What loadgen measured for one request.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace novaserve {

/// Times are seconds; `start_s` counts from the start of the run, the others from `start_s`
/// (the moment the client began connecting to send the request).
struct RequestRecord {
  uint64_t index = 0;
  double scheduled_s = 0;  ///< planned send time (open loop: the Poisson arrival)
  double start_s = 0;      ///< actual send time; start_s - scheduled_s is the client's lag
  int32_t max_tokens = 0;
  int32_t prompt_tokens = 0;          ///< by the workload (exact or estimated)
  int32_t server_prompt_tokens = -1;  ///< usage.prompt_tokens; -1 without usage
  /// usage.completion_tokens, or the number of content chunks when the server sent no usage.
  int32_t output_tokens = 0;
  bool usage_reported = false;
  int32_t content_chunks = 0;  ///< chunks with non-empty text
  double ttft_s = -1;          ///< to the first content chunk; -1 if none came
  double e2e_s = -1;           ///< to "data: [DONE]" (or to the failure)
  std::vector<float> itl_s;    ///< gaps between consecutive content chunks
  int http_status = 0;         ///< 0 when no response head arrived
  /// Empty for a success; else the error class counted in reports: "HTTP <status>",
  /// "connection" (connect, write or read failed), "timeout" (--request-timeout),
  /// "unfinished" (still running at the drain deadline), "stream" (an error object in the
  /// stream, unparsable JSON, or no [DONE]).
  std::string error;
  std::string error_message;  ///< detail, e.g. the server's error message (<= 300 bytes)

  bool ok() const { return error.empty(); }
};

}  // namespace novaserve
