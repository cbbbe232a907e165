// Collector: an engine test's record of every request's outputs (the OutputCallback of each
// request), checking that nothing arrives after a request's final output.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <vector>

#include "engine/request.h"

namespace novaserve {

// Collects every request's outputs; wait() blocks until all submitted requests finished.
class Collector {
 public:
  OutputCallback callback(uint64_t id) {
    return [this, id](StepOutput&& out) {
      std::lock_guard<std::mutex> lk(mu_);
      auto& r = results_[id];
      EXPECT_FALSE(r.finish.has_value()) << "request " << id << " got output after its finish";
      if (out.token >= 0) r.tokens.push_back(out.token);
      if (out.finish) {
        r.finish = out.finish;
        r.last = out;
        ++finished_;
        cv_.notify_all();
      } else if (r.first_output.token < 0) {
        r.first_output = out;
      }
    };
  }
  bool wait(size_t n, std::chrono::seconds timeout = std::chrono::seconds(120)) {
    std::unique_lock<std::mutex> lk(mu_);
    return cv_.wait_for(lk, timeout, [&] { return finished_ >= n; });
  }
  struct Result {
    std::vector<int32_t> tokens;
    std::optional<FinishReason> finish;
    StepOutput first_output;
    StepOutput last;
  };
  Result get(uint64_t id) {
    std::lock_guard<std::mutex> lk(mu_);
    return results_[id];
  }
  size_t num_outputs(uint64_t id) {
    std::lock_guard<std::mutex> lk(mu_);
    return results_[id].tokens.size();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<uint64_t, Result> results_;
  size_t finished_ = 0;
};

}  // namespace novaserve
