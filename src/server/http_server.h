// The OpenAI-compatible HTTP server: I/O threads running Boost.Asio, the tokenize pool that
// handlers hand their heavy part to, the listener, the route table, signal handling and the
// shutdown drain. The model is published once loaded; until then /health answers 503 "loading".
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/result.h"
#include "server/http_listener.h"
#include "server/router.h"
#include "server/server_context.h"
#include "server/tokenize_pool.h"

namespace novaserve {

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 8080;  ///< 0 picks a free port
  int backlog = 2048;
  int threads = 2;  ///< --threads-http: I/O threads (HTTP framing, light endpoints, responses)
  /// --threads-tokenize: the pool for body parsing, templates and tokenization (TokenizePool)
  int tokenize_threads = 2;
  TransportLimits limits;
  /// --shutdown-timeout: after the first signal, in-flight requests may finish for this long;
  /// the rest are aborted (finish_reason "abort").
  std::chrono::milliseconds shutdown_timeout{30000};
  bool handle_signals = true;  ///< SIGTERM/SIGINT start the drain (tests turn this off)
};

class HttpServer {
 public:
  /// `ctx` carries config, auth, metrics and lifecycle; it must outlive the server, which sets
  /// its tokenize_executor (and clears it when destroyed).
  HttpServer(HttpServerOptions options, ServerContext& ctx);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  /// Binds the listening socket. Errors: see HttpListener::listen.
  Status listen();
  uint16_t port() const;

  /// Starts accepting, the I/O threads and (if enabled) signal handling.
  void start();

  /// Blocks until a drain is requested (first SIGTERM/SIGINT, or ctx.lifecycle.begin_drain()),
  /// lets in-flight requests (and those being prepared on the tokenize pool) finish for up to
  /// shutdown_timeout, aborts the rest, then stops the I/O threads and the tokenize pool. The
  /// engine and the model services may be destroyed after this returns, before the server.
  void run_until_drained();

 private:
  void wait_signal();

  HttpServerOptions options_;
  ServerContext& ctx_;
  boost::asio::io_context ioc_;
  Router router_;
  Dispatch dispatch_;
  std::shared_ptr<HttpListener> listener_;
  // Signals are waited for on a thread of their own, which runs until the server is destroyed:
  // a second signal must still end the process while the engine is being torn down after the
  // I/O threads have stopped (a pipeline step waiting on a hung rank, docs/multi-gpu.md).
  boost::asio::io_context signal_ioc_;
  boost::asio::signal_set signals_;
  std::thread signal_thread_;
  int signals_seen_ = 0;
  std::vector<std::thread> threads_;
  // After ioc_: its queued work holds sessions, whose sockets belong to ioc_.
  TokenizePool tokenize_pool_;
};

}  // namespace novaserve
