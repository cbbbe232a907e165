// The GPU and governor series of /metrics, refreshed at each scrape from the telemetry
// sampler's last snapshot (never from the SMI itself) and the governor's status. A field a GPU
// does not report has no series: its family appears only once some GPU reports it.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "telemetry/governor_loop.h"
#include "telemetry/smi.h"

namespace prometheus {
class Registry;
class Gauge;
class Counter;
template <typename T>
class Family;
}  // namespace prometheus

namespace novaserve {

/// Not thread-safe: ServerMetrics calls it under its scrape lock.
class GpuMetrics {
 public:
  /// `model_name`: the value of every series' model_name label (empty: no such label).
  GpuMetrics(prometheus::Registry& registry, std::string model_name);
  /// novaserve_gpu_* {gpu="I"}: gauges set, and removed for a GPU or field missing from
  /// `samples`; the energy counter advances by the growth of the sample's energy and keeps its
  /// total while a GPU does not answer (a counter must not go back).
  void update(const std::vector<GpuSample>& samples);
  /// novaserve_governor_target_sm_clock_hertz, novaserve_governor_actuating and
  /// novaserve_governor_decisions_total{direction}.
  void update_governor(const GovernorStatus& status);

 private:
  prometheus::Family<prometheus::Gauge>& gauge_family(const std::string& name,
                                                      const std::string& help);
  std::map<std::string, std::string> labels() const;

  prometheus::Registry& registry_;
  std::string model_name_;
  std::map<std::string, prometheus::Family<prometheus::Gauge>*> gauges_;
  prometheus::Family<prometheus::Counter>* energy_ = nullptr;
  std::map<int, double> last_energy_;  // per GPU: the energy reading already counted
  prometheus::Family<prometheus::Counter>* decisions_ = nullptr;
  double counted_decisions_[3] = {0, 0, 0};
};

}  // namespace novaserve
