// Samples an SMI on a thread of its own every interval, so that a slow driver call never delays
// an engine step or a /metrics scrape: readers get the last complete snapshot.
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "telemetry/smi.h"

namespace novaserve {

class TelemetrySampler {
 public:
  /// Starts sampling `smi` (all its GPUs) every `interval`. A GPU whose sample fails is logged
  /// once on stderr (with `log_prefix`) and left out of the snapshot until it answers again.
  TelemetrySampler(std::unique_ptr<Smi> smi, std::chrono::milliseconds interval,
                   std::string log_prefix);
  /// Stops and joins the thread.
  ~TelemetrySampler();
  TelemetrySampler(const TelemetrySampler&) = delete;
  TelemetrySampler& operator=(const TelemetrySampler&) = delete;

  /// The last snapshot: one entry per GPU that answered (thread-safe, never blocks on the SMI).
  std::vector<GpuSample> latest() const;

 private:
  void run();
  void sample_all();

  std::unique_ptr<Smi> smi_;
  std::chrono::milliseconds interval_;
  std::string log_prefix_;
  std::vector<bool> logged_;  // per GPU: its failure was logged (sampler thread only)
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::vector<GpuSample> latest_;
  std::thread thread_;
};

}  // namespace novaserve
