#include "telemetry/latency_window.h"

#include <algorithm>
#include <cmath>

namespace novaserve {
namespace {

constexpr double kLow = 1e-5;  // seconds: the lower edge of bucket 0
constexpr double kGrowth = 1.025;
const double kLogGrowth = std::log(kGrowth);
const int kBuckets = static_cast<int>(std::ceil(std::log(3600.0 / kLow) / kLogGrowth)) + 1;

double lower_edge(int i) {
  return kLow * std::pow(kGrowth, i);
}

}  // namespace

WindowedHistogram::WindowedHistogram() : counts_(static_cast<size_t>(kBuckets), 0) {}

void WindowedHistogram::observe(double seconds) {
  int i = 0;
  if (seconds > kLow) i = static_cast<int>(std::log(seconds / kLow) / kLogGrowth);
  i = std::clamp(i, 0, kBuckets - 1);
  std::lock_guard<std::mutex> lock(mu_);
  ++counts_[static_cast<size_t>(i)];
  ++total_;
}

std::pair<double, int64_t> WindowedHistogram::take(double q) {
  std::vector<int64_t> counts(counts_.size(), 0);
  int64_t total = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    counts.swap(counts_);
    std::swap(total, total_);
  }
  if (total == 0) return {std::numeric_limits<double>::quiet_NaN(), 0};
  const double rank = std::clamp(q, 0.0, 1.0) * static_cast<double>(total);
  double seen = 0;
  for (int i = 0; i < kBuckets; ++i) {
    const auto c = static_cast<double>(counts[static_cast<size_t>(i)]);
    if (c > 0 && seen + c >= rank) {
      const double lo = lower_edge(i);
      return {lo + (lower_edge(i + 1) - lo) * ((rank - seen) / c), total};
    }
    seen += c;
  }
  return {lower_edge(kBuckets), total};
}

}  // namespace novaserve
