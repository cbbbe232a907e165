#include "telemetry/gpu_energy_model.h"

#include <algorithm>

namespace novaserve {

double GpuEnergyModel::voltage_ratio(double hz) const {
  if (hz <= knee_clock_hertz) return v_min_ratio;
  const double x =
      (std::min(hz, max_clock_hertz) - knee_clock_hertz) / (max_clock_hertz - knee_clock_hertz);
  return v_min_ratio + (1 - v_min_ratio) * x;
}

double GpuEnergyModel::step_seconds(double hz, int tokens, int sequences) const {
  const double slow = max_clock_hertz / hz;  // compute-bound time ∝ 1/f
  const auto part = [slow](double cost, double memory_share) {
    return cost * (memory_share + (1 - memory_share) * slow);
  };
  return part(step_fixed_seconds, fixed_memory_share) +
         part(step_per_token_seconds * tokens, per_token_memory_share) +
         part(step_per_sequence_seconds * sequences, per_sequence_memory_share);
}

double GpuEnergyModel::busy_power_watts(double hz) const {
  const double f = std::min(hz, max_clock_hertz) / max_clock_hertz;
  const double v = voltage_ratio(hz);
  return idle_watts +
         (busy_watts - idle_watts) * (uncore_power_share + (1 - uncore_power_share) * f * v * v);
}

}  // namespace novaserve
