// Safetensors reader with full validation. Source: huggingface/safetensors, docs "Format":
// an 8-byte little-endian header length N, N bytes of UTF-8 JSON mapping tensor names to
// {"dtype", "shape", "data_offsets": [begin, end]} (plus an optional "__metadata__" map of
// strings), then the data section whose bytes the tensors cover exactly. The checks follow the
// reference implementation's (header size limit, offsets contiguous and covering the data,
// shape x dtype size == end - begin with overflow checks).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/mmap_file.h"
#include "common/result.h"
#include "gguf/safetensors_dtype.h"

namespace novaserve {

/// One tensor's header entry.
struct SafetensorsTensorInfo {
  std::string name;
  SafetensorsDtype dtype = SafetensorsDtype::kF32;
  /// Dimensions in PyTorch (row-major) order: shape.back() is the contiguous dimension, so an
  /// nn.Linear weight is {out_features, in_features}. Empty for a scalar (one element).
  std::vector<uint64_t> shape;
  uint64_t begin = 0;   ///< data_offsets[0], relative to the start of the data section
  uint64_t nbytes = 0;  ///< data_offsets[1] - data_offsets[0]
  /// Product of `shape` (1 for a scalar). Never overflows: parse() checked it.
  uint64_t n_elements() const {
    uint64_t n = 1;
    for (uint64_t d : shape) n *= d;
    return n;
  }
};

/// A parsed, fully validated safetensors file. Header entries are copied out; tensor data stays
/// in the mapping (zero-copy, and possibly unaligned: read it with memcpy).
class SafetensorsFile {
 public:
  /// Largest accepted header (bytes), as in the reference implementation.
  static constexpr uint64_t kMaxHeaderBytes = 100'000'000;

  /// Maps and parses `path`. Errors: kNotFound/kIo from mapping; kInvalidInput as for parse().
  static Result<std::unique_ptr<SafetensorsFile>> open(const std::string& path);

  /// Parses an in-memory file (the fuzz target's entry point); the buffer must outlive the
  /// result, which never reads outside [data, data + size). `name` prefixes every message.
  /// Errors (kInvalidInput, naming the file and, where there is one, the tensor): file shorter
  /// than 8 bytes; header length over kMaxHeaderBytes or past the end of the file; header not
  /// UTF-8, not starting with '{', not JSON or not an object; a duplicate key; __metadata__ not
  /// a map of strings; an entry that is not an object or lacks dtype/shape/data_offsets; an
  /// unknown dtype; a shape that is not an array of non-negative integers; data_offsets not two
  /// non-negative integers with begin <= end; element count x dtype size overflowing 64 bits or
  /// differing from end - begin; an end past the data section; tensors (sorted by begin) that
  /// overlap or leave a gap; trailing bytes after the last tensor.
  static Result<std::unique_ptr<SafetensorsFile>> parse(const uint8_t* data, size_t size,
                                                        std::string name = "<buffer>");

  /// The path (open) or the name given to parse().
  const std::string& name() const { return name_; }
  size_t file_size() const { return size_; }
  /// Absolute byte offset of the data section (8 + header length).
  uint64_t data_offset() const { return data_offset_; }

  /// Every tensor, sorted by data offset (file order).
  const std::vector<SafetensorsTensorInfo>& tensors() const { return tensors_; }
  /// nullptr when absent.
  const SafetensorsTensorInfo* find(std::string_view name) const;
  /// The __metadata__ entries, sorted by key (empty when absent).
  const std::vector<std::pair<std::string, std::string>>& metadata() const { return metadata_; }
  /// Pointer to a tensor's first byte inside the mapping (valid while this object lives).
  const uint8_t* tensor_data(const SafetensorsTensorInfo& t) const {
    return base_ + data_offset_ + t.begin;
  }

 private:
  SafetensorsFile() = default;
  std::unique_ptr<MmapFile> file_;  // null when parsed from a caller-owned buffer
  const uint8_t* base_ = nullptr;
  size_t size_ = 0;
  uint64_t data_offset_ = 0;
  std::string name_;
  std::vector<SafetensorsTensorInfo> tensors_;
  std::unordered_map<std::string, size_t> index_;
  std::vector<std::pair<std::string, std::string>> metadata_;
};

}  // namespace novaserve
