// Open-loop arrival times: a Poisson process.
#pragma once

#include <cstdint>

#include "loadgen/rng.h"

namespace novaserve {

/// Arrival times of a Poisson process of rate `qps` (requests per second, > 0): the first
/// request at t = 0 (so every run sends at least one), then independent exponential gaps of
/// mean 1/qps. The sequence depends only on (qps, seed).
class PoissonArrivals {
 public:
  PoissonArrivals(double qps, uint64_t seed) : qps_(qps), rng_(seed, kStream) {}

  /// Seconds from the start of the run to the next arrival; non-decreasing.
  double next() {
    const double t = next_;
    next_ += rng_.exponential(qps_);
    return t;
  }

 private:
  // Its own stream of the seed, apart from the request shapes' streams (LoadgenRng's index).
  static constexpr uint64_t kStream = ~0ull;
  double qps_;
  LoadgenRng rng_;
  double next_ = 0;
};

}  // namespace novaserve
