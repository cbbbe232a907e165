// What the SLO governor reads each interval: the P95 TTFT and ITL of the requests observed since
// the previous read, from the server's latency histograms (not by scraping /metrics).
#pragma once

#include <cstdint>
#include <limits>
#include <mutex>
#include <vector>

namespace novaserve {

/// One governor window. A quantile is NaN when the window had no observation of it.
struct LatencyWindow {
  double ttft_p95_seconds = std::numeric_limits<double>::quiet_NaN();
  double itl_p95_seconds = std::numeric_limits<double>::quiet_NaN();
  int64_t ttft_count = 0;
  int64_t itl_count = 0;
};

/// Source of windows; take_window() returns the window since the last call and starts a new one.
class LatencySource {
 public:
  virtual ~LatencySource() = default;
  virtual LatencyWindow take_window() = 0;
};

/// A histogram of one window with geometric buckets 2.5% wide from 10 µs to 1 hour, so that a
/// quantile it reports is within 2.5% of the exact one (the Prometheus histograms' buckets are
/// far coarser around a 40 ms ITL SLO). Thread-safe; observe() takes a short lock.
class WindowedHistogram {
 public:
  WindowedHistogram();
  /// Records one latency in seconds (values outside the range land in the end buckets).
  void observe(double seconds);
  /// The `q` quantile (0..1) of the window and its count, then empties the window. NaN when
  /// empty. Interpolates linearly inside a bucket, like PromQL's histogram_quantile.
  std::pair<double, int64_t> take(double q);

 private:
  std::mutex mu_;
  std::vector<int64_t> counts_;
  int64_t total_ = 0;
};

}  // namespace novaserve
