// Everything a doctor run looks at besides the file tree: the environment, the user, the
// server's flags and what this binary was built with. Injected, so that tests fix each one.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace novaserve::doctor {

/// Environment variables by name (the process environment on a host, a map in tests).
using Environment = std::map<std::string, std::string>;

/// The user the server will run as (doctor's own user on a host: run doctor as the service user
/// for its verdict on device permissions to hold).
struct UserIdentity {
  uint32_t uid = 0;
  std::vector<uint32_t> gids;  ///< primary and supplementary groups
  std::string name;            ///< for messages and the usermod fix; may be empty
};

/// Inputs of one doctor run. The flag defaults are those of `novaserve serve`.
struct DoctorInputs {
  Environment env;
  UserIdentity user;
  int64_t backlog = 2048;              ///< serve's --backlog (listen(2) backlog)
  int64_t max_num_seqs = 32;           ///< serve's --max-num-seqs
  int64_t max_queued_requests = 1024;  ///< serve's --max-queued-requests
  std::string model_path;              ///< --model: a GGUF file; empty skips the capacity check
  /// CUDART_VERSION of the CUDA runtime this binary was built with (e.g. 13000 for 13.0);
  /// empty for a build without CUDA, which skips nvidia.driver-runtime-mismatch.
  std::optional<int> cuda_runtime_version;
  /// Total memory of GPU 0 in bytes as its runtime reports it (cudaMemGetInfo/hipMemGetInfo in
  /// a GPU build); empty when unknown. AMD's sysfs VRAM size is read from the tree instead.
  std::optional<uint64_t> runtime_gpu_memory_bytes;
};

}  // namespace novaserve::doctor
