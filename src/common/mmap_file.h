// Read-only memory-mapped file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "common/result.h"

namespace novaserve {

/// A read-only, private mapping of a whole file. Movable, not copyable; unmaps on destruction.
/// An empty file maps to data()==nullptr, size()==0.
class MmapFile {
 public:
  /// Maps `path`. Errors: kNotFound (missing), kIo (unreadable, a directory, mmap failure).
  static Result<std::unique_ptr<MmapFile>> open(const std::string& path);
  ~MmapFile();
  MmapFile(const MmapFile&) = delete;
  MmapFile& operator=(const MmapFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  MmapFile() = default;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  std::string path_;
};

}  // namespace novaserve
