#include "engine/prefix_memory.h"

#include <algorithm>

#include "common/splitmix64.h"

namespace novaserve {

std::vector<uint64_t> prompt_block_hashes(std::span<const int32_t> prompt, int32_t block_size,
                                          int32_t max_blocks) {
  std::vector<uint64_t> hashes;
  if (block_size < 1) return hashes;
  const size_t blocks =
      std::min(prompt.size() / static_cast<size_t>(block_size), static_cast<size_t>(max_blocks));
  hashes.reserve(blocks);
  uint64_t h = 0x6e6f7661ull;  // any fixed seed
  for (size_t b = 0; b < blocks; ++b) {
    for (size_t i = b * block_size; i < (b + 1) * block_size; ++i) {
      h = splitmix64_mix(h ^ static_cast<uint32_t>(prompt[i]));
    }
    hashes.push_back(h);
  }
  return hashes;
}

PrefixMemory::PrefixMemory(size_t capacity) : capacity_(std::max<size_t>(capacity, 1)) {}

int32_t PrefixMemory::matched_blocks(std::span<const uint64_t> hashes) const {
  int32_t n = 0;
  for (uint64_t h : hashes) {
    if (!index_.contains(h)) break;
    ++n;
  }
  return n;
}

void PrefixMemory::remember(std::span<const uint64_t> hashes) {
  // Back to front, so that a prompt's first blocks (the ones other prompts share) end up the
  // most recent and are forgotten last.
  for (auto rit = hashes.rbegin(); rit != hashes.rend(); ++rit) {
    const uint64_t h = *rit;
    auto it = index_.find(h);
    if (it != index_.end()) {
      order_.splice(order_.begin(), order_, it->second);
      continue;
    }
    order_.push_front(h);
    index_.emplace(h, order_.begin());
    if (index_.size() > capacity_) {
      index_.erase(order_.back());
      order_.pop_back();
    }
  }
}

}  // namespace novaserve
