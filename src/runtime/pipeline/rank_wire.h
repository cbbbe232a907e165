// The byte format of one message between the ranks of a multi-process pipeline (rank_link.h):
// the magic "NVSP", a u32 header length and a u64 payload length (little-endian), the JSON
// header, the payload. Shared by the links (rank_link.cpp) and rank 0's listener, which reads
// hellos under smaller limits (rank_listener.cpp).
#pragma once

#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <string>

#include "common/result.h"

namespace novaserve {

/// Bytes before a message's header: magic, header length, payload length.
inline constexpr size_t kRankPrefixBytes = 16;

/// The lengths a message's prefix announces.
struct RankPrefix {
  uint32_t header_bytes = 0;
  uint64_t payload_bytes = 0;
};

/// The prefix of a message of `header_bytes` + `payload_bytes`.
std::array<uint8_t, kRankPrefixBytes> encode_rank_prefix(uint32_t header_bytes,
                                                         uint64_t payload_bytes);

/// Checks `prefix` (the first kRankPrefixBytes of a message from `peer`) before anything is
/// allocated for the message: the magic, and the lengths against `max_header` and `max_payload`
/// bytes. Errors: kIo naming `peer`: bytes that are not a rank message, or a message over the
/// limits.
Result<RankPrefix> decode_rank_prefix(std::span<const uint8_t, kRankPrefixBytes> prefix,
                                      uint64_t max_header, uint64_t max_payload,
                                      const std::string& peer);

/// Parses a header. Errors: kIo naming `peer` when it is not a JSON object with a string "op".
Result<nlohmann::json> parse_rank_header(const std::string& text, const std::string& peer);

}  // namespace novaserve
