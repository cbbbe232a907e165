#include "loadgen/latency_stats.h"

#include <algorithm>
#include <cmath>

namespace novaserve {

double percentile_sorted(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  const double rank = std::clamp(p, 0.0, 100.0) / 100.0 * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<size_t>(std::floor(rank));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = rank - static_cast<double>(lo);
  // Written out so that inf - inf never turns into NaN.
  if (frac == 0 || sorted[lo] == sorted[hi]) return sorted[lo];
  if (std::isinf(sorted[hi])) return sorted[hi];
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

Percentiles summarize(std::vector<double> values) {
  Percentiles out;
  if (values.empty()) return out;
  std::sort(values.begin(), values.end());
  out.count = values.size();
  double sum = 0;
  for (double v : values) sum += v;
  out.mean = sum / static_cast<double>(values.size());
  out.p50 = percentile_sorted(values, 50);
  out.p90 = percentile_sorted(values, 90);
  out.p95 = percentile_sorted(values, 95);
  out.p99 = percentile_sorted(values, 99);
  out.max = values.back();
  return out;
}

}  // namespace novaserve
