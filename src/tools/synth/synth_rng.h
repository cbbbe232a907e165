// Counter-based random numbers for synthetic weights: every row of every tensor has its own
// stream, seeded from (seed, tensor name, row), so a file's bytes do not depend on which thread
// generates which row or in what order.
#pragma once

#include <cstdint>

#include "common/splitmix64.h"

namespace novaserve {

/// The random stream of one tensor row.
class SynthRowRng {
 public:
  SynthRowRng(uint64_t seed, uint64_t name_hash, uint64_t row)
      : state_(splitmix64_mix(splitmix64_mix(splitmix64_mix(seed) ^ name_hash) + row)) {}

  /// Next 64 random bits (SplitMix64 stream: Weyl increment + finalizer).
  uint64_t next_u64() {
    state_ += 0x9e3779b97f4a7c15ull;
    return splitmix64_mix(state_);
  }

  /// A zero-mean, unit-variance value: the Irwin-Hall sum of four 16-bit uniforms, rescaled.
  /// Not Gaussian (bounded by +-2*sqrt(3), piecewise cubic density), which random test weights
  /// do not need; in exchange it uses only integer and exactly rounded f32 arithmetic, so the
  /// bits are the same on every machine and libm.
  float next_unit() {
    const uint64_t r = next_u64();
    const uint32_t sum = static_cast<uint32_t>(r & 0xffff) +
                         static_cast<uint32_t>((r >> 16) & 0xffff) +
                         static_cast<uint32_t>((r >> 32) & 0xffff) + static_cast<uint32_t>(r >> 48);
    // Each 16-bit uniform u = (k + 0.5) / 65536 has mean 1/2 and variance ~1/12, so
    // sum(u) - 2 = (sum(k) + 2 - 131072) / 65536 has variance 1/3; multiply by sqrt(3).
    constexpr float kScale = 1.7320508075688772f / 65536.0f;
    return static_cast<float>(static_cast<int32_t>(sum) + 2 - 131072) * kScale;
  }

 private:
  uint64_t state_;
};

}  // namespace novaserve
