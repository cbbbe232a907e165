#include "server/tokenize_pool.h"

#include <pthread.h>

#include <algorithm>

namespace novaserve {

TokenizePool::TokenizePool(int threads)
    : ioc_(std::max(1, threads)), work_(boost::asio::make_work_guard(ioc_)) {
  for (int i = 0; i < std::max(1, threads); ++i) {
    threads_.emplace_back([this] {
      pthread_setname_np(pthread_self(), "ns-tokenize");
      ioc_.run();
    });
  }
}

TokenizePool::~TokenizePool() {
  stop();
}

void TokenizePool::stop() {
  work_.reset();
  ioc_.stop();
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
}

}  // namespace novaserve
