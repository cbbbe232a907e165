#include "gguf/byte_cursor.h"

namespace novaserve {

Status ByteCursor::require(uint64_t n, std::string_view field) const {
  if (n <= remaining()) return {};
  return Err(ErrorCode::kInvalidInput,
             "truncated: " + std::string(field) + " needs " + std::to_string(n) +
                 " bytes at offset " + std::to_string(pos_) + " but only " +
                 std::to_string(remaining()) + " remain (file size " + std::to_string(size_) + ")");
}

Status ByteCursor::read_string(std::string& out, std::string_view field) {
  const size_t len_offset = pos_;
  uint64_t len = 0;
  // The field name is only concatenated on the error path: this runs once per vocab token.
  if (remaining() < sizeof(len)) return require(sizeof(len), std::string(field) + " length");
  std::memcpy(&len, data_ + pos_, sizeof(len));
  pos_ += sizeof(len);
  if (len > remaining()) {
    return Err(ErrorCode::kInvalidInput,
               "truncated: " + std::string(field) + " length " + std::to_string(len) +
                   " (at offset " + std::to_string(len_offset) + ") runs past the end: only " +
                   std::to_string(remaining()) + " bytes remain (file size " +
                   std::to_string(size_) + ")");
  }
  out.assign(reinterpret_cast<const char*>(data_ + pos_), static_cast<size_t>(len));
  pos_ += static_cast<size_t>(len);
  return {};
}

}  // namespace novaserve
