#include "server/gpu_metrics.h"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include <optional>

namespace novaserve {
namespace {

struct GaugeField {
  const char* name;
  const char* help;
  std::optional<double> GpuSample::*field;
};

const GaugeField kGaugeFields[] = {
    {"novaserve_gpu_temperature_celsius", "GPU temperature (SMI's GPU/edge sensor).",
     &GpuSample::temperature_celsius},
    {"novaserve_gpu_power_watts", "Board power draw as averaged by the driver.",
     &GpuSample::power_watts},
    {"novaserve_gpu_utilization_ratio", "Share of the last sample period a kernel ran (0 to 1).",
     &GpuSample::utilization_ratio},
    {"novaserve_gpu_memory_used_bytes", "Device memory in use (all processes).",
     &GpuSample::memory_used_bytes},
    {"novaserve_gpu_memory_total_bytes", "Device memory.", &GpuSample::memory_total_bytes},
    {"novaserve_gpu_sm_clock_hertz", "Current SM (graphics) clock.", &GpuSample::sm_clock_hertz},
    {"novaserve_gpu_memory_clock_hertz", "Current memory clock.", &GpuSample::memory_clock_hertz},
};

}  // namespace

GpuMetrics::GpuMetrics(prometheus::Registry& registry, std::string model_name)
    : registry_(registry), model_name_(std::move(model_name)) {}

std::map<std::string, std::string> GpuMetrics::labels() const {
  if (model_name_.empty()) return {};
  return {{"model_name", model_name_}};
}

prometheus::Family<prometheus::Gauge>& GpuMetrics::gauge_family(const std::string& name,
                                                                const std::string& help) {
  auto it = gauges_.find(name);
  if (it != gauges_.end()) return *it->second;
  auto& f = prometheus::BuildGauge().Name(name).Help(help).Labels(labels()).Register(registry_);
  gauges_[name] = &f;
  return f;
}

void GpuMetrics::update(const std::vector<GpuSample>& samples) {
  // Series for GPUs and fields not in this snapshot go (Family::Remove), so that a failing SMI
  // leaves its metrics out instead of freezing their last value.
  for (const GaugeField& g : kGaugeFields) {
    auto it = gauges_.find(g.name);
    for (int gpu = 0; gpu < 64 && it != gauges_.end(); ++gpu) {
      const prometheus::Labels l{{"gpu", std::to_string(gpu)}};
      if (it->second->Has(l)) it->second->Remove(&it->second->Add(l));
    }
  }
  for (const GpuSample& s : samples) {
    const prometheus::Labels l{{"gpu", std::to_string(s.index)}};
    for (const GaugeField& g : kGaugeFields) {
      if (const auto& v = s.*g.field) gauge_family(g.name, g.help).Add(l).Set(*v);
    }
    if (s.energy_joules) {
      if (energy_ == nullptr) {
        energy_ = &prometheus::BuildCounter()
                       .Name("novaserve_gpu_energy_joules_total")
                       .Help(
                           "Energy the GPU consumed (the driver's counter; per-token energy is "
                           "this rate over novaserve_generation_tokens_total's).")
                       .Labels(labels())
                       .Register(registry_);
      }
      double& last = last_energy_[s.index];
      // A counter only grows: a driver reload (reading below the last) restarts the baseline.
      auto& counter = energy_->Add(l);  // exported from the first reading, 0 or not
      if (*s.energy_joules > last) counter.Increment(*s.energy_joules - last);
      last = *s.energy_joules;
    }
  }
}

void GpuMetrics::update_governor(const GovernorStatus& status) {
  gauge_family("novaserve_governor_target_sm_clock_hertz",
               "SM clock cap the SLO governor chose (applied only with --governor-actuate).")
      .Add({})
      .Set(status.target_hertz.load());
  gauge_family("novaserve_governor_actuating",
               "1 when the governor changes device settings, 0 in dry-run.")
      .Add({})
      .Set(status.actuating.load() ? 1 : 0);
  if (decisions_ == nullptr) {
    decisions_ = &prometheus::BuildCounter()
                      .Name("novaserve_governor_decisions_total")
                      .Help("Governor decisions (one per window) by direction: up, down, hold.")
                      .Labels(labels())
                      .Register(registry_);
  }
  for (int d = 0; d < 3; ++d) {
    const double now = static_cast<double>(status.decisions[d].load());
    auto& c = decisions_->Add({{"direction", direction_name(static_cast<GovernorDirection>(d))}});
    if (now > counted_decisions_[d]) c.Increment(now - counted_decisions_[d]);
    counted_decisions_[d] = now;
  }
}

}  // namespace novaserve
