// The NCCL declarations of runtime/pipeline/nccl_abi.h against the real nccl.h, where the CUDA
// toolkit is installed (CMake adds its include folder to this file only): every value, size and
// entry point type must be NCCL's, since the transport calls the library through them.
#include "runtime/pipeline/nccl_abi.h"

#include <gtest/gtest.h>

#include <type_traits>

#if defined(NOVASERVE_HAVE_NCCL_HEADER)
#include <nccl.h>
#endif

namespace novaserve {
namespace {

#if defined(NOVASERVE_HAVE_NCCL_HEADER)
static_assert(sizeof(nccl::UniqueId) == sizeof(ncclUniqueId));
static_assert(nccl::kUniqueIdBytes == NCCL_UNIQUE_ID_BYTES);
static_assert(sizeof(nccl::Result) == sizeof(ncclResult_t));
static_assert(sizeof(nccl::DataType) == sizeof(ncclDataType_t));
static_assert(sizeof(nccl::Comm) == sizeof(ncclComm_t));
static_assert(sizeof(nccl::Stream) == sizeof(cudaStream_t));
constexpr bool same_value(int ours, int theirs) {
  return ours == theirs;
}
static_assert(same_value(nccl::kSuccess, ncclSuccess) &&
              same_value(nccl::kUnhandledCudaError, ncclUnhandledCudaError) &&
              same_value(nccl::kSystemError, ncclSystemError) &&
              same_value(nccl::kInternalError, ncclInternalError) &&
              same_value(nccl::kInvalidArgument, ncclInvalidArgument) &&
              same_value(nccl::kInvalidUsage, ncclInvalidUsage) &&
              same_value(nccl::kRemoteError, ncclRemoteError) &&
              same_value(nccl::kInProgress, ncclInProgress));
static_assert(same_value(nccl::kFloat32, ncclFloat32));

// Our entry point types with NCCL's types put back for ours must be NCCL's declarations. The
// stream stays void* in ours (cudaStream_t is a pointer, passed the same way).
template <typename T>
struct ToNccl {
  using type = T;
};
template <>
struct ToNccl<nccl::Comm> {
  using type = ncclComm_t;
};
template <>
struct ToNccl<nccl::Comm*> {
  using type = ncclComm_t*;
};
template <>
struct ToNccl<nccl::UniqueId> {
  using type = ncclUniqueId;
};
template <>
struct ToNccl<nccl::UniqueId*> {
  using type = ncclUniqueId*;
};
template <>
struct ToNccl<nccl::Result> {
  using type = ncclResult_t;
};
template <>
struct ToNccl<nccl::Result*> {
  using type = ncclResult_t*;
};
template <>
struct ToNccl<nccl::DataType> {
  using type = ncclDataType_t;
};
template <typename R, typename... A>
struct ToNccl<R (*)(A...)> {
  using type = typename ToNccl<R>::type (*)(typename ToNccl<A>::type...);
};
template <typename Fn>
using AsNccl = typename ToNccl<Fn>::type;

static_assert(std::is_same_v<AsNccl<nccl::GetVersionFn>, decltype(&ncclGetVersion)>);
static_assert(std::is_same_v<AsNccl<nccl::GetUniqueIdFn>, decltype(&ncclGetUniqueId)>);
static_assert(std::is_same_v<AsNccl<nccl::CommInitRankFn>, decltype(&ncclCommInitRank)>);
static_assert(std::is_same_v<AsNccl<nccl::CommAbortFn>, decltype(&ncclCommAbort)>);
static_assert(std::is_same_v<AsNccl<nccl::CommGetAsyncErrorFn>, decltype(&ncclCommGetAsyncError)>);
static_assert(std::is_same_v<AsNccl<nccl::GetErrorStringFn>, decltype(&ncclGetErrorString)>);
static_assert(std::is_pointer_v<cudaStream_t>);
static_assert(
    std::is_same_v<decltype(&ncclSend), ncclResult_t (*)(const void*, size_t, ncclDataType_t, int,
                                                         ncclComm_t, cudaStream_t)>);
static_assert(
    std::is_same_v<AsNccl<nccl::SendFn>,
                   ncclResult_t (*)(const void*, size_t, ncclDataType_t, int, ncclComm_t, void*)>);
static_assert(std::is_same_v<decltype(&ncclRecv), ncclResult_t (*)(void*, size_t, ncclDataType_t,
                                                                   int, ncclComm_t, cudaStream_t)>);
static_assert(std::is_same_v<AsNccl<nccl::RecvFn>, ncclResult_t (*)(void*, size_t, ncclDataType_t,
                                                                    int, ncclComm_t, void*)>);
#endif

TEST(NcclAbi, MatchesTheNcclHeader) {
#if defined(NOVASERVE_HAVE_NCCL_HEADER)
  // The checks are the static_asserts above; reaching here means they compiled.
  SUCCEED() << "nccl.h of NCCL " << NCCL_MAJOR << "." << NCCL_MINOR << "." << NCCL_PATCH;
#else
  GTEST_SKIP() << "nccl.h not found under /usr/local/cuda/include when this build was configured";
#endif
}

}  // namespace
}  // namespace novaserve
