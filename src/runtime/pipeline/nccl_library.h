// NcclLibrary: libnccl loaded at run time (dlopen), with the entry points NcclTransport calls
// (nccl_abi.h). Nothing links NCCL: a binary without it on the machine runs as before, and the
// path can name another library of the same symbols (the test fake, tests/fakes/fake_nccl.cpp).
// A build configured with NOVASERVE_NCCL=OFF (the HIP build: Debian has no RCCL) leaves the
// loading out, so every load fails with the reason.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "common/result.h"
#include "runtime/pipeline/nccl_abi.h"

namespace novaserve {

/// The library that load() opens when NOVASERVE_NCCL_LIB is not set: the soname, found through
/// LD_LIBRARY_PATH and the loader's cache.
inline constexpr const char* kDefaultNcclLibrary = "libnccl.so.2";

/// The resolved entry points.
struct NcclApi {
  nccl::GetVersionFn get_version = nullptr;
  nccl::GetUniqueIdFn get_unique_id = nullptr;
  nccl::CommInitRankFn comm_init_rank = nullptr;
  nccl::CommAbortFn comm_abort = nullptr;
  nccl::CommGetAsyncErrorFn comm_get_async_error = nullptr;
  nccl::SendFn send = nullptr;
  nccl::RecvFn recv = nullptr;
  nccl::GetErrorStringFn get_error_string = nullptr;
};

/// Sets NCCL_NVLS_ENABLE=0 in the environment unless it is set (to anything): NVLink SHARP
/// (NVLS, multicast) stays off on the multi-GPU machines this project runs on (issue 17), and a
/// pipeline's send/recv never uses it; a user who sets the variable decides. load_from() calls
/// it before opening the library (NCCL reads its environment when a communicator is created).
void set_nccl_env_defaults();

/// A loaded NCCL, kept loaded until the process ends. Thread-safe (immutable).
class NcclLibrary {
 public:
  /// load_from(NOVASERVE_NCCL_LIB when it is set and not empty, else kDefaultNcclLibrary).
  static Result<std::shared_ptr<const NcclLibrary>> load();
  /// Opens `path` (a path, or a file name the loader searches) and resolves every NcclApi entry
  /// point; a path opened before returns the same library (failures are not remembered).
  /// Errors: kUnsupported when this build leaves NCCL out (NOVASERVE_NCCL=OFF) or the library
  /// lacks an entry point (naming it); kNotFound when it cannot be opened (dlerror's reason and
  /// where to point NOVASERVE_NCCL_LIB). Each is one line.
  static Result<std::shared_ptr<const NcclLibrary>> load_from(const std::string& path);

  /// As given to load_from().
  const std::string& path() const { return path_; }
  const NcclApi& api() const { return api_; }
  /// "2.28.9" from ncclGetVersion (major x 10000 + minor x 100 + patch, NCCL >= 2.9), or
  /// "unknown" when it fails.
  std::string version() const;
  /// A new ncclUniqueId (ncclGetUniqueId: on real NCCL, rank 0's bootstrap address). Errors:
  /// kInternal naming the NCCL error.
  Result<nccl::UniqueId> unique_id() const;
  /// "ncclSend: unhandled system error (...)": the call and NCCL's text for `r`.
  std::string error_text(const char* call, nccl::Result r) const;

 private:
  NcclLibrary(std::string path, NcclApi api) : path_(std::move(path)), api_(api) {}

  std::string path_;
  NcclApi api_;
};

/// `id` as 256 lowercase hex digits (how the rank link carries it).
std::string unique_id_hex(const nccl::UniqueId& id);
/// The inverse. Errors: kInvalidInput when `hex` is not 256 hex digits.
Result<nccl::UniqueId> parse_unique_id_hex(std::string_view hex);

}  // namespace novaserve
