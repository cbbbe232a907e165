// GGUF file reader (versions 2 and 3). Source: the GGUF specification (ggml docs/gguf.md).
// CONTRACT (other layers code against this header; the gguf helper implements it).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/mmap_file.h"
#include "common/result.h"
#include "gguf/gguf_value.h"
#include "quant/ggml_type.h"

namespace novaserve {

/// One tensor's header entry. `dims` are ggml's ne[]: dims[0] is the innermost (contiguous)
/// dimension, i.e. a weight matrix [out_features, in_features] has dims = {in, out}.
struct GgufTensorInfo {
  std::string name;
  std::vector<uint64_t> dims;  ///< 1..4 entries, each >= 1
  GgmlType type;
  uint64_t offset = 0;  ///< relative to the start of the data section, aligned
  uint64_t nbytes = 0;  ///< size of the tensor's data in bytes
  uint64_t n_elements() const {
    uint64_t n = 1;
    for (auto d : dims) n *= d;
    return n;
  }
};

/// A parsed, fully validated GGUF file. Metadata and tensor infos are copied out of the file;
/// tensor data stays in the mapping (zero-copy).
class GgufFile {
 public:
  /// Maps and parses `path`. Errors: kNotFound/kIo for file problems, kInvalidInput (message names
  /// the field and byte offset) for malformed content, kUnsupported for unknown versions/types.
  static Result<std::unique_ptr<GgufFile>> open(const std::string& path);

  /// Parses an in-memory buffer (the fuzz target's entry point). The buffer must outlive the
  /// returned object. Never reads outside [data, data+size).
  static Result<std::unique_ptr<GgufFile>> parse(const uint8_t* data, size_t size);

  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }  ///< absolute byte offset of data section
  size_t file_size() const { return size_; }

  /// All key/value pairs in file order.
  const std::vector<GgufKv>& metadata() const { return kvs_; }
  /// nullptr when the key is absent.
  const GgufValue* find(std::string_view key) const;

  // Typed getters. Errors: kNotFound (absent) or kInvalidInput (present with the wrong type;
  // message names the key and both types). get_int accepts any integer type; get_float accepts
  // f32/f64 and integers.
  Result<std::string> get_string(std::string_view key) const;
  Result<int64_t> get_int(std::string_view key) const;
  Result<double> get_float(std::string_view key) const;
  Result<bool> get_bool(std::string_view key) const;
  /// The array stored under `key` (pointer valid while this object lives). Errors: kNotFound, or
  /// kInvalidInput when the value is not an array. Check `elem_type` before reading items.
  Result<const GgufArray*> get_array(std::string_view key) const;

  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
  /// nullptr when absent.
  const GgufTensorInfo* find_tensor(std::string_view name) const;
  /// Pointer to a tensor's bytes inside the mapping (valid while this object lives).
  const uint8_t* tensor_data(const GgufTensorInfo& t) const {
    return base_ + data_offset_ + t.offset;
  }

 private:
  GgufFile() = default;
  std::unique_ptr<MmapFile> file_;  // null when parsed from a caller-owned buffer
  const uint8_t* base_ = nullptr;
  size_t size_ = 0;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  uint64_t data_offset_ = 0;
  std::vector<GgufKv> kvs_;
  std::vector<GgufTensorInfo> tensors_;
};

}  // namespace novaserve
