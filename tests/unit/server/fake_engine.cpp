#include "fake_engine.h"

#include <algorithm>

namespace novaserve::testing {

FakeEngine::FakeEngine(Options options) : options_(std::move(options)) {
  thread_ = std::thread([this] { loop(); });
}

FakeEngine::~FakeEngine() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

Status FakeEngine::submit(EngineRequest request) {
  if (request.prompt.empty()) return Err(ErrorCode::kInvalidInput, "empty prompt");
  std::lock_guard<std::mutex> lock(mu_);
  EngineRequest copy = request;
  copy.on_output = nullptr;
  submitted_.push_back(std::move(copy));
  waiting_.push_back({std::move(request), 0});
  cv_.notify_all();
  return {};
}

void FakeEngine::notify() {
  ++notifications_;
  cv_.notify_all();
}

EngineStats FakeEngine::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  EngineStats s;
  s.num_running = static_cast<int32_t>(running_.size());
  s.num_waiting = static_cast<int32_t>(waiting_.size());
  s.kv_cache_usage = running_.empty() ? 0.0 : 0.5;
  s.max_num_seqs = static_cast<int32_t>(options_.max_running);
  return s;
}

void FakeEngine::set_paused(bool paused) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    paused_ = paused;
  }
  cv_.notify_all();
}

std::vector<EngineRequest> FakeEngine::submitted() const {
  std::lock_guard<std::mutex> lock(mu_);
  return submitted_;
}

size_t FakeEngine::active() const {
  std::lock_guard<std::mutex> lock(mu_);
  return waiting_.size() + running_.size();
}

bool FakeEngine::wait_idle(std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, timeout, [&] { return waiting_.empty() && running_.empty(); });
}

bool FakeEngine::step_one(Running& r) {
  StepOutput out;
  out.prompt_tokens = static_cast<int32_t>(r.req.prompt.size());
  out.first_scheduled = r.req.arrival;
  if (r.req.cancelled->load()) {
    out.finish = FinishReason::kAbort;
    out.generated_tokens = r.generated;
    ++aborted_;
    r.req.on_output(std::move(out));
    return true;
  }
  const auto& script = options_.script;
  out.token = script[static_cast<size_t>(r.generated) % script.size()];
  out.generated_tokens = ++r.generated;
  out.logprob = -0.25f * static_cast<float>(r.generated);
  for (int32_t k = 0; k < r.req.top_logprobs; ++k) {
    out.top_logprobs.push_back({(out.token + k) % options_.n_vocab, -0.1f * static_cast<float>(k)});
  }
  const bool may_stop = r.generated > r.req.min_tokens;
  const bool stop_id = std::find(r.req.stop_token_ids.begin(), r.req.stop_token_ids.end(),
                                 out.token) != r.req.stop_token_ids.end();
  if (may_stop && ((out.token == options_.eog_token && !r.req.ignore_eos) || stop_id)) {
    out.finish = FinishReason::kStop;
  } else if (r.generated >= r.req.max_tokens) {
    out.finish = FinishReason::kLength;
  }
  const bool done = out.finish.has_value();
  r.req.on_output(std::move(out));
  return done;
}

void FakeEngine::loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    // Cancelled waiting requests are dropped without compute, even while paused.
    for (auto it = waiting_.begin(); it != waiting_.end();) {
      if (it->req.cancelled->load()) {
        StepOutput out;
        out.finish = FinishReason::kAbort;
        ++aborted_;
        it->req.on_output(std::move(out));
        it = waiting_.erase(it);
      } else {
        ++it;
      }
    }
    if (paused_ || (waiting_.empty() && running_.empty())) {
      cv_.notify_all();  // wakes wait_idle()
      cv_.wait(lock);
      continue;
    }
    while (!waiting_.empty() && running_.size() < options_.max_running) {
      running_.push_back(std::move(waiting_.front()));
      waiting_.pop_front();
    }
    for (auto it = running_.begin(); it != running_.end();) {
      it = step_one(*it) ? running_.erase(it) : it + 1;
    }
    if (running_.empty() && waiting_.empty()) cv_.notify_all();
    cv_.wait_for(lock, options_.step);
  }
  // Whatever is left ends with abort, as the real engine does on shutdown.
  for (auto& r : running_) {
    StepOutput out;
    out.finish = FinishReason::kAbort;
    r.req.on_output(std::move(out));
  }
  for (auto& r : waiting_) {
    StepOutput out;
    out.finish = FinishReason::kAbort;
    r.req.on_output(std::move(out));
  }
}

}  // namespace novaserve::testing
