// The part of NCCL's C ABI that NcclTransport calls (nccl_transport.h), declared here instead of
// taken from nccl.h. Source: nccl.h of NCCL 2.x and the NCCL API reference
// (docs.nvidia.com/deeplearning/nccl/user-guide/docs/api.html); these declarations have not
// changed since NCCL 2.0 (ncclCommGetAsyncError: 2.4, ncclSend/ncclRecv: 2.7).
//
// Why not nccl.h: it includes cuda_runtime.h, so runtime/pipeline, which the CPU build and the
// HIP build compile without CUDA headers, would depend on the CUDA toolkit. The library is
// loaded at run time (dlopen, nccl_library.h) in any case, and with these few declarations the
// CPU build compiles the transport and tests it against a library of the same symbols over host
// memory (tests/fakes/fake_nccl.cpp). NcclAbi.MatchesTheNcclHeader (tests/unit) checks every
// value and size here against nccl.h where the CUDA toolkit is installed.
#pragma once

#include <cstddef>

namespace novaserve::nccl {

/// ncclComm_t: an opaque handle.
struct CommHandle;
using Comm = CommHandle*;

/// NCCL_UNIQUE_ID_BYTES.
inline constexpr size_t kUniqueIdBytes = 128;

/// ncclUniqueId: the bootstrap address rank 0 hands to every rank; passed by value.
struct UniqueId {
  char internal[kUniqueIdBytes];
};

/// ncclResult_t (a C enum: int-sized).
enum Result : int {
  kSuccess = 0,
  kUnhandledCudaError = 1,
  kSystemError = 2,
  kInternalError = 3,
  kInvalidArgument = 4,
  kInvalidUsage = 5,
  kRemoteError = 6,
  kInProgress = 7,
};

/// ncclDataType_t: only the type the transport moves.
enum DataType : int {
  kFloat32 = 7,  ///< ncclFloat32 (= ncclFloat)
};

/// cudaStream_t, which NCCL takes by value: a pointer. Null is the legacy default stream; the
/// transport passes the stage's own stream (or null for host memory, where a test library
/// ignores it).
using Stream = void*;

// The entry points, by their nccl.h names.
using GetVersionFn = Result (*)(int* version);
using GetUniqueIdFn = Result (*)(UniqueId* id);
using CommInitRankFn = Result (*)(Comm* comm, int nranks, UniqueId id, int rank);
using CommAbortFn = Result (*)(Comm comm);
using CommGetAsyncErrorFn = Result (*)(Comm comm, Result* async_error);
using SendFn = Result (*)(const void* sendbuff, size_t count, DataType type, int peer, Comm comm,
                          Stream stream);
using RecvFn = Result (*)(void* recvbuff, size_t count, DataType type, int peer, Comm comm,
                          Stream stream);
using GetErrorStringFn = const char* (*)(Result result);

}  // namespace novaserve::nccl
