#include "server/http_server.h"

#include <pthread.h>

#include <boost/asio/post.hpp>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <exception>

#include "common/exit_hooks.h"
#include "server/routes.h"

namespace novaserve {
namespace {

// After --shutdown-timeout aborts what is still running, the aborted responses get this long to
// be written before the I/O threads stop.
constexpr std::chrono::seconds kAbortGrace{5};

}  // namespace

HttpServer::HttpServer(HttpServerOptions options, ServerContext& ctx)
    : options_(std::move(options)),
      ctx_(ctx),
      ioc_(std::max(1, options_.threads)),
      signals_(signal_ioc_),
      tokenize_pool_(options_.tokenize_threads) {
  ctx_.tokenize_executor = tokenize_pool_.executor();
  add_routes(router_, ctx_);
  dispatch_ = [this](HttpRequest&& r, std::shared_ptr<ResponseChannel> c) {
    dispatch_request(router_, ctx_, std::move(r), c);
  };
  listener_ = std::make_shared<HttpListener>(ioc_, options_.limits, dispatch_);
}

HttpServer::~HttpServer() {
  signal_ioc_.stop();
  if (signal_thread_.joinable()) signal_thread_.join();
  ioc_.stop();
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
  tokenize_pool_.stop();
  ctx_.tokenize_executor = {};
}

Status HttpServer::listen() {
  return listener_->listen(options_.host, options_.port, options_.backlog);
}

uint16_t HttpServer::port() const {
  return listener_->port();
}

void HttpServer::start() {
  listener_->start();
  if (options_.handle_signals) {
    signals_.add(SIGTERM);
    signals_.add(SIGINT);
    wait_signal();
    signal_thread_ = std::thread([this] {
      pthread_setname_np(pthread_self(), "ns-signals");
      signal_ioc_.run();
    });
  }
  for (int i = 0; i < std::max(1, options_.threads); ++i) {
    threads_.emplace_back([this] {
      // Named for per-thread CPU accounting (/proc/PID/task/*/comm; tools/bench_serve.py).
      pthread_setname_np(pthread_self(), "ns-http");
      // A handler that throws (a bug, or bad_alloc) must not end the process with
      // std::terminate: log it and keep serving; Asio resumes where it stopped.
      for (;;) {
        try {
          ioc_.run();
          break;
        } catch (const std::exception& e) {
          std::fprintf(stderr, "novaserve serve: internal error in an I/O thread: %s\n", e.what());
        }
      }
    });
  }
}

void HttpServer::wait_signal() {
  signals_.async_wait([this](const boost::system::error_code& ec, int sig) {
    if (ec) return;
    if (ctx_.lifecycle.state() == ServeState::kLoading) {
      // Nothing is served yet, so there is nothing to drain, and start-up may block for long
      // (rank 0 of a multi-process pipeline waits up to --nccl-init-timeout for its ranks):
      // stop now, as a drain with no requests would. The exit hooks tell ranks that already
      // joined to shut down.
      std::fprintf(stderr, "novaserve serve: signal %d while loading: stopping\n", sig);
      run_exit_hooks();
      std::fflush(stderr);
      std::_Exit(0);
    }
    if (++signals_seen_ == 1) {
      std::fprintf(stderr,
                   "novaserve serve: signal %d: draining (%zu requests in flight, up to %lld s); "
                   "send it again to exit at once\n",
                   sig, ctx_.lifecycle.in_flight(),
                   static_cast<long long>(options_.shutdown_timeout.count() / 1000));
      ctx_.lifecycle.begin_drain();
      wait_signal();
    } else {
      std::fprintf(stderr, "novaserve serve: second signal %d: exiting now\n", sig);
      // _Exit skips destructors: the exit hooks put back any device setting the governor
      // changed, and tell the other ranks of a multi-process pipeline to shut down.
      run_exit_hooks();
      std::fflush(stderr);
      std::_Exit(128 + sig);
    }
  });
}

void HttpServer::run_until_drained() {
  ctx_.lifecycle.wait_for_drain();
  const auto deadline = std::chrono::steady_clock::now() + options_.shutdown_timeout;
  if (!ctx_.lifecycle.wait_idle(deadline)) {
    std::fprintf(stderr, "novaserve serve: shutdown timeout: aborting %zu requests\n",
                 ctx_.lifecycle.in_flight());
    ctx_.lifecycle.cancel_all();
    if (!ctx_.lifecycle.wait_idle(std::chrono::steady_clock::now() + kAbortGrace)) {
      std::fprintf(stderr, "novaserve serve: %zu requests did not end after abort\n",
                   ctx_.lifecycle.in_flight());
    }
  }
  // Responses are queued by now; let them reach the sockets before the I/O threads stop. This
  // waits on socket writes, which have no completion signal to block on, hence the polling.
  const auto flush_deadline = std::chrono::steady_clock::now() + kAbortGrace;
  while (listener_->open_exchanges() > 0 && std::chrono::steady_clock::now() < flush_deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  boost::asio::post(ioc_, [l = listener_] { l->stop(); });
  ioc_.stop();
  for (std::thread& t : threads_) t.join();
  threads_.clear();
  // Work still queued was accepted during the drain and its answer can no longer be written;
  // the running work finishes first, so nothing touches the model once this returns.
  tokenize_pool_.stop();
}

}  // namespace novaserve
