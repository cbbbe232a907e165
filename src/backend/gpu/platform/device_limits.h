// The current device's limits that kernel launchers plan with (compute capability, multiprocessor
// count, opt-in shared memory per block), queried once per device and cached: launchers plan
// every call, and a device attribute query per matmul would cost more than some kernels.
#pragma once

#include "common/result.h"

namespace novaserve::gpu {

struct DeviceLimits {
  int cc_major = 0;  ///< compute capability (CUDA; HIP reports its gfx major)
  int cc_minor = 0;
  int n_sms = 0;       ///< multiprocessors
  int smem_optin = 0;  ///< shared memory per block with the opt-in attribute (bytes)
};

/// The limits of the current device (cudaGetDevice), cached per device ordinal. Thread-safe.
/// Errors: kInternal naming the failed runtime query.
Result<DeviceLimits> current_device_limits();

}  // namespace novaserve::gpu
