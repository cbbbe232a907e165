// Stateless 64-bit mixing and string hashing: the building blocks of the counter-based random
// streams of synth (per-row weights) and loadgen (per-request shapes), which must give the same
// numbers on every standard library and thread schedule.
#pragma once

#include <cstdint>
#include <string_view>

namespace novaserve {

/// SplitMix64 finalizer (Steele, Lea, Flood 2014, "Fast splittable pseudorandom number
/// generators"): a bijective 64-bit mix with full avalanche.
inline uint64_t splitmix64_mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/// FNV-1a's 64-bit offset basis: the hash of no bytes.
inline constexpr uint64_t kFnv1a64Basis = 0xcbf29ce484222325ull;

/// FNV-1a 64-bit hash of a string (Fowler-Noll-Vo, offset basis and prime from the reference).
/// Pass the hash of earlier bytes as `h` to hash a sequence in pieces.
inline uint64_t fnv1a64(std::string_view s, uint64_t h = kFnv1a64Basis) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

}  // namespace novaserve
