// Percentile summaries of latency samples.
#pragma once

#include <cstddef>
#include <vector>

namespace novaserve {

/// Percentile `p` (0..100) of `sorted` (ascending), by linear interpolation between the two
/// closest ranks: rank = p/100 * (n - 1) (Hyndman & Fan 1996 definition 7; numpy's default), so
/// percentiles of small samples match what `numpy.percentile` prints. +infinity is allowed (a
/// failed request counted as infinitely slow); interpolating towards it gives +infinity.
/// Returns 0 for an empty vector.
double percentile_sorted(const std::vector<double>& sorted, double p);

/// Count, mean, P50/P90/P95/P99 and max of a sample, in the sample's unit. An empty sample
/// gives count 0 and zeros.
struct Percentiles {
  size_t count = 0;
  double mean = 0;
  double p50 = 0;
  double p90 = 0;
  double p95 = 0;
  double p99 = 0;
  double max = 0;
};

/// Summarizes `values` (any order; sorted in place).
Percentiles summarize(std::vector<double> values);

}  // namespace novaserve
