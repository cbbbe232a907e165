// The random numbers of a load test: arrival gaps and request shapes. std::*_distribution
// results differ between standard libraries, so a seed would not give the same workload
// everywhere; these few distributions are written out on a SplitMix64 stream instead.
#pragma once

#include <cmath>
#include <cstdint>

#include "common/splitmix64.h"

namespace novaserve {

/// A SplitMix64 stream (Steele, Lea, Flood 2014) with the distributions loadgen needs.
class LoadgenRng {
 public:
  /// A stream for (`seed`, `stream`): different streams of one seed are independent, so request
  /// i's shape does not depend on how many numbers other requests drew.
  explicit LoadgenRng(uint64_t seed, uint64_t stream = 0)
      : state_(splitmix64_mix(splitmix64_mix(seed) ^
                              splitmix64_mix(stream + 0x5851f42d4c957f2dull))) {}

  /// Next 64 random bits.
  uint64_t next_u64() {
    state_ += 0x9e3779b97f4a7c15ull;
    return splitmix64_mix(state_);
  }

  /// Uniform in [0, 1): the top 53 bits as a double.
  double uniform() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }

  /// Uniform integer in [lo, hi] (lo <= hi). Uses the multiply-shift range reduction (Lemire
  /// 2019); its bias, at most range / 2^64, is far below anything a load test can notice.
  int64_t uniform_int(int64_t lo, int64_t hi) {
    const auto range = static_cast<unsigned __int128>(static_cast<uint64_t>(hi - lo) + 1);
    return lo + static_cast<int64_t>((range * next_u64()) >> 64);
  }

  /// Exponential with the given rate (> 0), by inversion: -ln(1 - U) / rate.
  double exponential(double rate) { return -std::log1p(-uniform()) / rate; }

  /// An integer in [lo, hi] (1 <= lo <= hi) whose logarithm is uniform: as many short as long
  /// requests per doubling of length.
  int64_t log_uniform_int(int64_t lo, int64_t hi) {
    const double a = std::log(static_cast<double>(lo));
    const double b = std::log(static_cast<double>(hi) + 1.0);
    const auto v = static_cast<int64_t>(std::exp(a + (b - a) * uniform()));
    return v < lo ? lo : (v > hi ? hi : v);
  }

 private:
  uint64_t state_;
};

}  // namespace novaserve
