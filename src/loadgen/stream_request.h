// One streaming POST /v1/completions over its own connection, timed chunk by chunk.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <functional>
#include <string>

#include "loadgen/http_target.h"
#include "loadgen/request_record.h"
#include "loadgen/workload.h"

namespace novaserve {

using LoadClock = std::chrono::steady_clock;

/// Everything requests of one run share.
struct StreamRequestConfig {
  HttpTarget target;
  boost::asio::ip::tcp::resolver::results_type endpoints;  ///< resolved once per run
  std::string api_key;  ///< sent as "Authorization: Bearer" when not empty
  std::string model;    ///< the body's "model"; omitted when empty
  double temperature = 0;
  LoadClock::time_point run_start;
};

/// The JSON body of a request: {"model"?, "prompt", "max_tokens", "ignore_eos": true,
/// "temperature", "stream": true, "stream_options": {"include_usage": true}}. `ignore_eos`
/// (vLLM's and llama.cpp's extension) makes every server generate max_tokens tokens, so servers
/// are compared on the same work.
std::string completion_body(const StreamRequestConfig& config, const RequestSpec& spec);

/// Sends `spec` on a new connection made on a new strand of `executor` and reads the SSE
/// stream as it arrives (Beast's parser undoes the chunked encoding; SseParser splits events).
/// A content chunk is one whose choices hold non-empty "text"; output tokens come from the
/// final usage chunk, else from the count of content chunks. `deadline` bounds the whole
/// request; `deadline_is_drain` says whether hitting it means "unfinished" (the run's drain
/// deadline) rather than "timeout". `config` must outlive the request (the session keeps a
/// reference). `record` arrives with index, scheduled_s and token counts
/// filled; `done` is called exactly once with the completed record, on an I/O thread.
/// The connection sends "Connection: close" and is closed after [DONE]: one connection per
/// request keeps requests independent (no head-of-line waits for a pooled socket), at the
/// price of a TCP handshake in each TTFT (tens of microseconds on loopback).
void start_stream_request(boost::asio::any_io_executor executor, const StreamRequestConfig& config,
                          const RequestSpec& spec, RequestRecord record,
                          LoadClock::time_point deadline, bool deadline_is_drain,
                          std::function<void(RequestRecord)> done);

/// Seconds from `from` to `to`.
inline double seconds_between(LoadClock::time_point from, LoadClock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

}  // namespace novaserve
