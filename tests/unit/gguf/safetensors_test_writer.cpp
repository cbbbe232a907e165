#include "safetensors_test_writer.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

namespace novaserve::testing {

StTensor st_f32(std::string name, std::vector<uint64_t> shape, const std::vector<float>& values) {
  StTensor t{std::move(name), "F32", std::move(shape), std::vector<uint8_t>(values.size() * 4)};
  std::memcpy(t.data.data(), values.data(), t.data.size());
  return t;
}

std::vector<uint8_t> make_safetensors(
    const std::vector<StTensor>& tensors,
    const std::vector<std::pair<std::string, std::string>>& metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) {
    for (const auto& [k, v] : metadata) header["__metadata__"][k] = v;
  }
  std::vector<uint8_t> data;
  for (const auto& t : tensors) {
    const uint64_t begin = data.size();
    data.insert(data.end(), t.data.begin(), t.data.end());
    header[t.name] = {
        {"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {begin, data.size()}}};
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  return make_raw_safetensors(text, data);
}

std::vector<uint8_t> make_raw_safetensors(const std::string& header,
                                          const std::vector<uint8_t>& data, uint64_t header_len) {
  if (header_len == UINT64_MAX) header_len = header.size();
  std::vector<uint8_t> out(8 + header.size() + data.size());
  for (int i = 0; i < 8; ++i) out[i] = static_cast<uint8_t>(header_len >> (8 * i));
  std::copy(header.begin(), header.end(), out.begin() + 8);
  std::copy(data.begin(), data.end(), out.begin() + 8 + static_cast<std::ptrdiff_t>(header.size()));
  return out;
}

bool write_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  return static_cast<bool>(f);
}

bool write_bytes(const std::string& path, const std::string& text) {
  return write_bytes(path, std::vector<uint8_t>(text.begin(), text.end()));
}

}  // namespace novaserve::testing
