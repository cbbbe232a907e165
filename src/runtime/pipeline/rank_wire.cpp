#include "runtime/pipeline/rank_wire.h"

#include <algorithm>

namespace novaserve {
namespace {

constexpr std::array<uint8_t, 4> kMagic = {'N', 'V', 'S', 'P'};

void put_le(uint64_t v, int bytes, uint8_t* p) {
  for (int i = 0; i < bytes; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

uint64_t get_le(const uint8_t* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}

}  // namespace

std::array<uint8_t, kRankPrefixBytes> encode_rank_prefix(uint32_t header_bytes,
                                                         uint64_t payload_bytes) {
  std::array<uint8_t, kRankPrefixBytes> prefix{};
  std::copy(kMagic.begin(), kMagic.end(), prefix.begin());
  put_le(header_bytes, 4, prefix.data() + 4);
  put_le(payload_bytes, 8, prefix.data() + 8);
  return prefix;
}

Result<RankPrefix> decode_rank_prefix(std::span<const uint8_t, kRankPrefixBytes> prefix,
                                      uint64_t max_header, uint64_t max_payload,
                                      const std::string& peer) {
  if (!std::equal(kMagic.begin(), kMagic.end(), prefix.begin())) {
    return Err(ErrorCode::kIo, peer + " sent bytes that are not a novaserve rank message");
  }
  RankPrefix p;
  p.header_bytes = static_cast<uint32_t>(get_le(prefix.data() + 4, 4));
  p.payload_bytes = get_le(prefix.data() + 8, 8);
  if (p.header_bytes > max_header || p.payload_bytes > max_payload) {
    return Err(ErrorCode::kIo, peer + " announced a message of " + std::to_string(p.header_bytes) +
                                   " + " + std::to_string(p.payload_bytes) +
                                   " bytes, over the limits (" + std::to_string(max_header) +
                                   " + " + std::to_string(max_payload) + ")");
  }
  return p;
}

Result<nlohmann::json> parse_rank_header(const std::string& text, const std::string& peer) {
  nlohmann::json h = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!h.is_object() || !h.contains("op") || !h["op"].is_string()) {
    return Err(ErrorCode::kIo, peer + " sent a message header that is not a JSON object with op");
  }
  return h;
}

}  // namespace novaserve
