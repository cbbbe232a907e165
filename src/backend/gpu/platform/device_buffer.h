// Owners of counted GPU allocations (gpu_alloc.h): a device buffer and a pinned host buffer that
// free their memory on destruction. Move-only.
#pragma once

#include <cstddef>
#include <utility>

#include "backend/gpu/platform/gpu_alloc.h"

namespace novaserve::gpu {

/// `bytes` of device memory (device_alloc) or page-locked host memory (pinned_host_alloc).
template <bool kPinnedHost>
class GpuBuffer {
 public:
  GpuBuffer() = default;
  ~GpuBuffer() { release(); }
  GpuBuffer(GpuBuffer&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)), bytes_(o.bytes_) {}
  GpuBuffer& operator=(GpuBuffer&& o) noexcept {
    if (this != &o) {
      release();
      ptr_ = std::exchange(o.ptr_, nullptr);
      bytes_ = o.bytes_;
    }
    return *this;
  }
  GpuBuffer(const GpuBuffer&) = delete;
  GpuBuffer& operator=(const GpuBuffer&) = delete;

  /// Replaces the buffer by a new one of `bytes` (contents undefined; 0 frees it). Errors:
  /// kInternal naming `what` (out of memory); the buffer is then empty.
  Status reset(size_t bytes, const char* what) {
    release();
    void* p = nullptr;
    const Status st =
        kPinnedHost ? pinned_host_alloc(&p, bytes, what) : device_alloc(&p, bytes, what);
    if (!st.ok()) return st;
    ptr_ = p;
    bytes_ = bytes;
    return {};
  }
  /// Grows to at least `bytes` (reallocating, contents lost); never shrinks.
  Status reserve(size_t bytes, const char* what) {
    return bytes <= bytes_ ? Status{} : reset(bytes, what);
  }

  template <typename T = void>
  T* get() const {
    return static_cast<T*>(ptr_);
  }
  size_t bytes() const { return bytes_; }

 private:
  void release() {
    if (kPinnedHost) {
      pinned_host_free(ptr_);
    } else {
      device_free(ptr_);
    }
    ptr_ = nullptr;
    bytes_ = 0;
  }

  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

using DeviceBuffer = GpuBuffer<false>;
using PinnedBuffer = GpuBuffer<true>;

}  // namespace novaserve::gpu
