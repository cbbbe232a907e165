// Small non-streaming GETs: /v1/models before a run, /metrics during a soak.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <functional>
#include <string>

#include "common/result.h"
#include "loadgen/http_target.h"

namespace novaserve {

struct HttpReply {
  int status = 0;
  std::string body;
};

/// GETs `path` (e.g. "/metrics") on a new connection on a strand of `executor`, with
/// "Authorization: Bearer <api_key>" when the key is not empty. Calls `done` once, on an I/O
/// thread, with the reply (any status) or an error: kIo naming the failing step (connect, send,
/// read; "timed out" after `timeout`). Bodies over 64 MiB are an error.
void async_http_get(boost::asio::any_io_executor executor, const HttpTarget& target,
                    const boost::asio::ip::tcp::resolver::results_type& endpoints,
                    const std::string& path, const std::string& api_key,
                    std::chrono::milliseconds timeout, std::function<void(Result<HttpReply>)> done);

/// Resolves `target.host` (blocking). Errors: kIo with the resolver's message.
Result<boost::asio::ip::tcp::resolver::results_type> resolve_target(const HttpTarget& target);

/// async_http_get on a private io_context, waiting for the answer (for set-up before a run).
Result<HttpReply> http_get(const HttpTarget& target,
                           const boost::asio::ip::tcp::resolver::results_type& endpoints,
                           const std::string& path, const std::string& api_key,
                           std::chrono::milliseconds timeout);

}  // namespace novaserve
