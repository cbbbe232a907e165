// What a router remembers of the prompts it sent to one replica: the hashes of their leading KV
// blocks, so that it can guess, without asking the engine thread, whether a new prompt's prefix
// is in that replica's prefix cache. The guess follows the engine's own block granularity (full
// blocks of --block-size tokens, each hash chained over the blocks before it, as the prefix
// cache keys them) and forgets the least recently routed blocks beyond the replica's pool size.
#pragma once

#include <cstdint>
#include <list>
#include <span>
#include <unordered_map>
#include <vector>

namespace novaserve {

/// The chained hashes of the first full `block_size`-token blocks of `prompt`, at most
/// `max_blocks` of them: hash i covers tokens [0, (i + 1) * block_size). A trailing partial block
/// has none (the prefix cache shares full blocks only).
std::vector<uint64_t> prompt_block_hashes(std::span<const int32_t> prompt, int32_t block_size,
                                          int32_t max_blocks);

/// A bounded LRU set of block hashes. Not thread-safe (the router guards it).
class PrefixMemory {
 public:
  /// `capacity`: blocks remembered (>= 1), e.g. the replica's KV block count.
  explicit PrefixMemory(size_t capacity);

  /// How many leading hashes of `hashes` (a prompt_block_hashes() result) are remembered.
  int32_t matched_blocks(std::span<const uint64_t> hashes) const;
  /// Records `hashes` as the most recently routed, forgetting the oldest beyond the capacity.
  void remember(std::span<const uint64_t> hashes);
  size_t size() const { return index_.size(); }

 private:
  size_t capacity_;
  std::list<uint64_t> order_;  // most recent first
  std::unordered_map<uint64_t, std::list<uint64_t>::iterator> index_;
};

}  // namespace novaserve
