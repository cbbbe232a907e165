// Helpers for GGUF tests: a small valid file from GgufWriter and byte-level mutations of it.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "convert/gguf_writer.h"
#include "gguf/gguf_file.h"

namespace novaserve::testing {

inline std::string source_dir() {
  const char* env = std::getenv("NOVASERVE_SOURCE_DIR");
  return env ? env : NOVASERVE_SOURCE_DIR;
}

inline std::string shared_dir() {
  const char* env = std::getenv("NOVASERVE_SHARED_DIR");
  return env ? env : source_dir() + "/../shared";
}

inline std::string default_model_path() {
  return source_dir() + "/models/SmolLM2-135M-Instruct.Q4_1.gguf";
}

/// Why tests of the default model skip when it is absent.
inline constexpr const char* kNoDefaultModel =
    "default model absent: run tools/fetch_model.sh (make test does)";

/// The default model, opened; null when the file is absent (the caller skips with
/// kNoDefaultModel). A file that is there but does not open fails the test (and gives null).
inline std::shared_ptr<const GgufFile> open_default_model() {
  const std::string path = default_model_path();
  if (!std::filesystem::exists(path)) return nullptr;
  auto f = GgufFile::open(path);
  if (!f.ok()) {
    ADD_FAILURE() << path << ": " << f.error().message;
    return nullptr;
  }
  return std::shared_ptr<const GgufFile>(std::move(f.value()));
}

inline std::vector<uint8_t> pattern_bytes(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(seed + i * 7);
  return v;
}

/// A writer holding a little of everything: three kvs and two tensors ("tensor_a": f32 [4, 2],
/// 32 bytes; "tensor_b": q4_0 [32, 2], 36 bytes). Names are unique byte strings in the output so
/// tests can locate fields with find_unique().
inline GgufWriter small_writer() {
  GgufWriter w;
  w.add("general.architecture", gguf_string("llama"));
  w.add("test.count", gguf_u32(7));
  w.add("test.words", gguf_string_array({"alpha", "beta"}));
  EXPECT_TRUE(w.add_tensor("tensor_a", GgmlType::kF32, {4, 2}, pattern_bytes(32, 1)).ok());
  EXPECT_TRUE(w.add_tensor("tensor_b", GgmlType::kQ4_0, {32, 2}, pattern_bytes(36, 9)).ok());
  return w;
}

/// Position of `needle` in `buf`; fails the test unless it occurs exactly once.
inline size_t find_unique(const std::vector<uint8_t>& buf, std::string_view needle) {
  std::string_view hay(reinterpret_cast<const char*>(buf.data()), buf.size());
  const size_t pos = hay.find(needle);
  EXPECT_NE(pos, std::string_view::npos) << "'" << needle << "' not in buffer";
  EXPECT_EQ(hay.find(needle, pos + 1), std::string_view::npos) << "'" << needle << "' twice";
  return pos;
}

/// Overwrites sizeof(T) bytes at `pos` with `x` (little-endian host).
template <typename T>
void poke(std::vector<uint8_t>& buf, size_t pos, T x) {
  ASSERT_LE(pos + sizeof(T), buf.size());
  std::memcpy(buf.data() + pos, &x, sizeof(T));
}

/// Offsets of a tensor info's fields, found through its name in the serialized bytes.
struct TensorFields {
  size_t name_len, n_dims, dims, type, offset;
};
inline TensorFields tensor_fields(const std::vector<uint8_t>& buf, std::string_view name,
                                  size_t n_dims) {
  const size_t pos = find_unique(buf, name);
  const size_t nd = pos + name.size();
  return {pos - 8, nd, nd + 4, nd + 4 + 8 * n_dims, nd + 4 + 8 * n_dims + 4};
}

/// Expects parse() to fail with `code` and a message containing every part of `parts`.
inline void expect_rejected(const std::vector<uint8_t>& buf, ErrorCode code,
                            std::initializer_list<std::string_view> parts) {
  auto r = GgufFile::parse(buf.data(), buf.size());
  ASSERT_FALSE(r.ok()) << "parse accepted a malformed file";
  EXPECT_EQ(static_cast<int>(r.error().code), static_cast<int>(code)) << r.error().message;
  for (auto part : parts) {
    EXPECT_NE(r.error().message.find(part), std::string::npos)
        << "message lacks '" << part << "': " << r.error().message;
  }
}

}  // namespace novaserve::testing
