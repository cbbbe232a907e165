// Streaming GGUF writer: the header (metadata and tensor infos) is written first from declared
// tensor shapes, then tensor data is appended piece by piece, so a multi-gigabyte file never has
// to be held in memory. Layout as GgufWriter (GGUF specification, "File Structure"): tensor data
// in declaration order, each tensor's offset a multiple of the alignment.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "common/result.h"
#include "gguf/gguf_value.h"
#include "quant/ggml_type.h"

namespace novaserve {

/// A tensor as declared before its data exists. `dims` are ggml ne[] (dims[0] innermost).
struct GgufTensorDecl {
  std::string name;
  GgmlType type = GgmlType::kF32;
  std::vector<uint64_t> dims;
};

/// Bytes of a declared tensor. Errors: kInvalidInput (naming the tensor) when dims are empty,
/// over 4 or zero, dims[0] is not a multiple of the type's block size, or the size overflows.
Result<uint64_t> gguf_tensor_nbytes(const GgufTensorDecl& t);

/// Writes one GGUF file. Usage: create() writes the header; write() appends data to the current
/// tensor (tensors are filled in declaration order, padding is inserted when one is complete);
/// finish() checks that every tensor got all its bytes and closes the file. A writer destroyed
/// before a successful finish() removes the partial file, so no truncated GGUF is left behind.
/// Not thread-safe.
class GgufStreamWriter {
 public:
  /// Checks every tensor (see gguf_tensor_nbytes; names must be non-empty and at most 64 bytes),
  /// creates/truncates `path` and writes the header. The alignment is general.alignment from
  /// `kvs` when it is a uint32 power of two, else 32 (the reader's rule).
  /// Errors: kInvalidInput for a bad declaration, kIo naming the path.
  static Result<std::unique_ptr<GgufStreamWriter>> create(const std::string& path,
                                                          const std::vector<GgufKv>& kvs,
                                                          std::vector<GgufTensorDecl> tensors,
                                                          uint32_t version = 3);
  ~GgufStreamWriter();
  GgufStreamWriter(const GgufStreamWriter&) = delete;
  GgufStreamWriter& operator=(const GgufStreamWriter&) = delete;

  const std::vector<GgufTensorDecl>& tensors() const { return tensors_; }
  uint64_t tensor_nbytes(size_t i) const { return nbytes_[i]; }
  /// Size the finished file will have, in bytes.
  uint64_t file_size() const { return file_size_; }
  /// Index of the tensor that the next write() fills (== tensors().size() when all are full).
  size_t current_tensor() const { return current_; }

  /// Appends `n` bytes to the current tensor. Errors: kInvalidInput when n exceeds the bytes the
  /// current tensor still needs (a write never spans two tensors), kIo on a failed write.
  Status write(const void* data, uint64_t n);
  /// Errors: kInvalidInput naming the first tensor that is not complete; kIo on flush/close.
  Status finish();

 private:
  GgufStreamWriter() = default;
  Status put(const void* data, uint64_t n);

  std::string path_;
  std::FILE* file_ = nullptr;
  bool finished_ = false;
  uint64_t alignment_ = 32;
  uint64_t file_size_ = 0;
  std::vector<GgufTensorDecl> tensors_;
  std::vector<uint64_t> nbytes_;
  size_t current_ = 0;
  uint64_t written_in_current_ = 0;
};

}  // namespace novaserve
