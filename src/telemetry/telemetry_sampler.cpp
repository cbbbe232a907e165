#include "telemetry/telemetry_sampler.h"

#include <cstdio>

namespace novaserve {

TelemetrySampler::TelemetrySampler(std::unique_ptr<Smi> smi, std::chrono::milliseconds interval,
                                   std::string log_prefix)
    : smi_(std::move(smi)),
      interval_(interval),
      log_prefix_(std::move(log_prefix)),
      logged_(static_cast<size_t>(smi_->device_count()), false) {
  sample_all();  // a first snapshot before the first scrape
  thread_ = std::thread([this] { run(); });
}

TelemetrySampler::~TelemetrySampler() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

std::vector<GpuSample> TelemetrySampler::latest() const {
  std::lock_guard<std::mutex> lock(mu_);
  return latest_;
}

void TelemetrySampler::sample_all() {
  std::vector<GpuSample> out;
  for (int i = 0; i < smi_->device_count(); ++i) {
    auto s = smi_->sample(i);
    if (s.ok()) {
      out.push_back(s.value());
    } else if (!logged_[static_cast<size_t>(i)]) {
      logged_[static_cast<size_t>(i)] = true;
      std::fprintf(stderr, "%s: telemetry: %s; its GPU metrics are left out\n", log_prefix_.c_str(),
                   s.error().message.c_str());
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  latest_ = std::move(out);
}

void TelemetrySampler::run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!cv_.wait_for(lock, interval_, [this] { return stop_; })) {
    lock.unlock();
    sample_all();
    lock.lock();
  }
}

}  // namespace novaserve
