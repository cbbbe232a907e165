// Test-only safetensors writer (the product only reads safetensors): builds valid files from
// tensors, and raw files from a header string for the corruption tests.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace novaserve::testing {

/// One tensor: dtype spelling as in the header ("F32", ...), PyTorch-order shape, raw bytes.
struct StTensor {
  std::string name;
  std::string dtype;
  std::vector<uint64_t> shape;
  std::vector<uint8_t> data;
};

/// An F32 tensor holding `values` (row-major, `shape` in PyTorch order).
StTensor st_f32(std::string name, std::vector<uint64_t> shape, const std::vector<float>& values);

/// A valid safetensors file: tensors laid out back to back in the given order, header padded
/// with spaces to a multiple of 8 bytes (as the reference writer does).
std::vector<uint8_t> make_safetensors(
    const std::vector<StTensor>& tensors,
    const std::vector<std::pair<std::string, std::string>>& metadata = {});

/// 8-byte little-endian `header_len` (default: header.size()), then `header`, then `data`.
std::vector<uint8_t> make_raw_safetensors(const std::string& header,
                                          const std::vector<uint8_t>& data,
                                          uint64_t header_len = UINT64_MAX);

/// Writes `bytes` to `path`; false on failure.
bool write_bytes(const std::string& path, const std::vector<uint8_t>& bytes);
bool write_bytes(const std::string& path, const std::string& text);

}  // namespace novaserve::testing
