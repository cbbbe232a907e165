// Counted device and pinned-host allocations. Every allocation the GPU backend makes goes through
// these wrappers, so a test can read the counters before and after the steady-state step loop and
// assert that nothing was allocated in between (DESIGN.md: "No device or host allocation in the
// steady-state step loop").
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "backend/gpu/platform/gpu_status.h"
#include "backend/gpu/platform/vendor.h"
#include "common/result.h"

namespace novaserve::gpu {

/// Process-wide counters: successful cudaMalloc/hipMalloc calls, and successful
/// cudaMallocHost/hipHostMalloc calls, since start-up. Only ever increase.
struct GpuAllocCounters {
  int64_t device_allocs = 0;
  int64_t pinned_host_allocs = 0;
};

namespace detail {
inline std::atomic<int64_t> g_device_allocs{0};
inline std::atomic<int64_t> g_pinned_host_allocs{0};
}  // namespace detail

/// The counters now (relaxed reads: the counters are only compared across synchronization
/// points such as a finished step).
inline GpuAllocCounters gpu_alloc_counters() {
  return {detail::g_device_allocs.load(std::memory_order_relaxed),
          detail::g_pinned_host_allocs.load(std::memory_order_relaxed)};
}

/// *ptr = `bytes` of device memory (cudaMalloc), counted. bytes == 0 allocates nothing and sets
/// *ptr = nullptr. Errors: kInternal naming `what` and the runtime's message (out of memory).
inline Status device_alloc(void** ptr, size_t bytes, const char* what) {
  *ptr = nullptr;
  if (bytes == 0) return {};
  NOVASERVE_RETURN_IF_ERROR(gpu_status(cudaMalloc(ptr, bytes), what));
  detail::g_device_allocs.fetch_add(1, std::memory_order_relaxed);
  return {};
}

/// Frees memory from device_alloc (null is a no-op). Errors are ignored: this runs in
/// destructors, and a failed free at shutdown leaves nothing to recover.
inline void device_free(void* ptr) {
  if (ptr != nullptr) (void)cudaFree(ptr);
}

/// *ptr = `bytes` of page-locked host memory (cudaMallocHost), counted; for staging copies that
/// overlap with kernels. Errors: kInternal naming `what`.
inline Status pinned_host_alloc(void** ptr, size_t bytes, const char* what) {
  *ptr = nullptr;
  if (bytes == 0) return {};
  NOVASERVE_RETURN_IF_ERROR(gpu_status(cudaMallocHost(ptr, bytes), what));
  detail::g_pinned_host_allocs.fetch_add(1, std::memory_order_relaxed);
  return {};
}

/// Frees memory from pinned_host_alloc (null is a no-op).
inline void pinned_host_free(void* ptr) {
  if (ptr != nullptr) (void)cudaFreeHost(ptr);
}

}  // namespace novaserve::gpu
