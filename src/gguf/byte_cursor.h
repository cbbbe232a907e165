// Bounds-checked little-endian reader used by the GGUF (and other binary-format) parsers.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>

#include "common/result.h"

namespace novaserve {

static_assert(std::endian::native == std::endian::little,
              "GGUF is little-endian; ByteCursor copies bytes as-is");

/// Sequential reader over [data, data + size). Every read checks the remaining length first, so
/// a malformed length or count can never make a caller read outside the buffer. Errors are
/// kInvalidInput with a message "truncated: <field> needs N bytes at offset X but only R remain
/// (file size S)"; callers prefix their own context (key or tensor name).
class ByteCursor {
 public:
  ByteCursor(const uint8_t* data, size_t size) : data_(data), size_(size) {}

  size_t offset() const { return pos_; }
  size_t size() const { return size_; }
  size_t remaining() const { return size_ - pos_; }

  /// Reads one little-endian arithmetic value (integers, float, double).
  template <typename T>
  Status read(T& out, std::string_view field) {
    static_assert(std::is_arithmetic_v<T>);
    NOVASERVE_RETURN_IF_ERROR(require(sizeof(T), field));
    std::memcpy(&out, data_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return {};
  }

  /// Reads a GGUF string: uint64 byte length, then that many bytes (not NUL-terminated).
  Status read_string(std::string& out, std::string_view field);

  /// Fails unless `n` more bytes are available.
  Status require(uint64_t n, std::string_view field) const;

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

}  // namespace novaserve
