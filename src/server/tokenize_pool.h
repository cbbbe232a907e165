// The --threads-tokenize workers: threads that run the heavy, pure part of request handlers
// (body parsing, validation, chat templates, tokenization), so that a big prompt never holds an
// HTTP I/O thread and /health, /metrics and small requests stay fast while it tokenizes.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <thread>
#include <vector>

namespace novaserve {

/// `threads` threads named "ns-tokenize" running posted work until stop().
///
/// An io_context run by our own threads rather than boost::asio::thread_pool: Boost 1.74's
/// thread_pool starts its threads itself, with no hook to name them, and the name is what
/// per-thread CPU accounting reads (/proc/PID/task/*/comm, tools/bench_serve.py), as for the
/// "ns-http" I/O threads.
class TokenizePool {
 public:
  /// Starts `threads` (>= 1) threads.
  explicit TokenizePool(int threads);
  /// stop().
  ~TokenizePool();
  TokenizePool(const TokenizePool&) = delete;
  TokenizePool& operator=(const TokenizePool&) = delete;

  /// Where work is posted. Valid until the pool is destroyed; after stop() posted work is
  /// dropped (destroyed with the pool, never run).
  boost::asio::any_io_executor executor() { return ioc_.get_executor(); }

  /// Drops work that has not started, waits for running work to finish and joins the threads.
  /// Idempotent. Must not be called from a pool thread.
  void stop();

 private:
  boost::asio::io_context ioc_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_;
  std::vector<std::thread> threads_;
};

}  // namespace novaserve
