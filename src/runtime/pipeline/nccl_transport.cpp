#include "runtime/pipeline/nccl_transport.h"

#include <condition_variable>
#include <mutex>
#include <thread>

#include "common/format_number.h"

namespace novaserve {
namespace {

using Clock = std::chrono::steady_clock;

// The wait after a transfer polls the stream: yielding for this long, then sleeping kPollSleep per
// poll (a decode step's transfer takes microseconds; a prefill chunk's up to milliseconds).
constexpr auto kSpin = std::chrono::milliseconds(1);
constexpr auto kPollSleep = std::chrono::microseconds(50);

std::string seconds(std::chrono::milliseconds t) {
  return format_number(static_cast<double>(t.count()) / 1000.0);
}

// ncclCommInitRank's result, handed from its thread.
struct InitState {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  bool abandoned = false;  // the caller gave up: the thread aborts what it gets
  Status device;           // make_current's result
  nccl::Result result = nccl::kSuccess;
  nccl::Comm comm = nullptr;
};

}  // namespace

Result<std::unique_ptr<NcclTransport>> NcclTransport::create(
    std::shared_ptr<const NcclLibrary> library, const nccl::UniqueId& id, int rank, int world_size,
    StageStream stream, std::chrono::milliseconds init_timeout,
    std::chrono::milliseconds step_timeout) {
  const std::string who = "rank " + std::to_string(rank) + " of " + std::to_string(world_size);
  if (world_size < 2 || rank < 0 || rank >= world_size) {
    return Err(ErrorCode::kInvalidInput,
               "an NCCL transport needs a world of >= 2 ranks and a "
               "rank inside it, got " +
                   who);
  }
  auto state = std::make_shared<InitState>();
  std::thread init([state, library, id, rank, world_size, make_current = stream.make_current] {
    Status device = make_current ? make_current() : Status();
    nccl::Comm comm = nullptr;
    nccl::Result r = nccl::kSuccess;
    if (device.ok()) r = library->api().comm_init_rank(&comm, world_size, id, rank);
    std::lock_guard<std::mutex> lock(state->mu);
    if (state->abandoned) {
      if (comm != nullptr) library->api().comm_abort(comm);
      return;
    }
    state->device = std::move(device);
    state->result = r;
    state->comm = comm;
    state->done = true;
    state->cv.notify_all();
  });
  {
    std::unique_lock<std::mutex> lock(state->mu);
    if (!state->cv.wait_for(lock, init_timeout, [&] { return state->done; })) {
      state->abandoned = true;
      lock.unlock();
      init.detach();
      return Err(ErrorCode::kIo, who + ": ncclCommInitRank did not finish within " +
                                     seconds(init_timeout) +
                                     " s (--nccl-init-timeout): a rank did not join the NCCL "
                                     "communicator");
    }
  }
  init.join();
  if (!state->device.ok()) return state->device.error();
  if (state->result != nccl::kSuccess) {
    std::string message = who + ": " + library->error_text("ncclCommInitRank", state->result);
    if (state->result == nccl::kInvalidUsage) {
      message += "; two ranks on one GPU? NCCL refuses them (use --pipeline-transport tcp there)";
    }
    return Err(ErrorCode::kInternal, message);
  }
  std::unique_ptr<NcclTransport> t(new NcclTransport());
  t->library_ = std::move(library);
  t->comm_ = state->comm;
  t->rank_ = rank;
  t->world_size_ = world_size;
  t->stream_ = std::move(stream);
  t->step_timeout_ = step_timeout;
  return t;
}

NcclTransport::~NcclTransport() {
  if (comm_ != nullptr) library_->api().comm_abort(comm_);
}

Error NcclTransport::fail(ErrorCode code, const std::string& message) {
  if (failure_.empty()) {
    failure_ = message;
    failure_code_ = code;
    if (comm_ != nullptr) library_->api().comm_abort(comm_);
    comm_ = nullptr;
  }
  return Err(failure_code_, failure_);
}

Status NcclTransport::ready() {
  if (!failure_.empty()) return Err(failure_code_, failure_);
  if (stream_.make_current) {
    const Status st = stream_.make_current();
    if (!st.ok()) return fail(st.error().code, st.error().message);
  }
  return {};
}

Status NcclTransport::send(int from_stage, const float* src, int64_t n_values) {
  if (from_stage != rank_ || rank_ + 1 >= world_size_ || n_values < 0) {
    return Err(ErrorCode::kInvalidInput,
               "NCCL transport of rank " + std::to_string(rank_) + ": cannot send from stage " +
                   std::to_string(from_stage) + " (" + std::to_string(n_values) + " values)");
  }
  NOVASERVE_RETURN_IF_ERROR(ready());
  const std::string link =
      "rank " + std::to_string(rank_) + " to rank " + std::to_string(rank_ + 1) + ": ";
  const nccl::Result r = library_->api().send(src, static_cast<size_t>(n_values), nccl::kFloat32,
                                              rank_ + 1, comm_, stream_.stream);
  if (r != nccl::kSuccess) {
    return fail(ErrorCode::kInternal, link + library_->error_text("ncclSend", r));
  }
  return wait_stream(link);
}

Status NcclTransport::recv(int to_stage, float* dst, int64_t n_values) {
  if (to_stage != rank_ || rank_ == 0 || n_values < 0) {
    return Err(ErrorCode::kInvalidInput,
               "NCCL transport of rank " + std::to_string(rank_) + ": cannot receive into stage " +
                   std::to_string(to_stage) + " (" + std::to_string(n_values) + " values)");
  }
  NOVASERVE_RETURN_IF_ERROR(ready());
  const std::string link =
      "rank " + std::to_string(rank_) + " from rank " + std::to_string(rank_ - 1) + ": ";
  const nccl::Result r = library_->api().recv(dst, static_cast<size_t>(n_values), nccl::kFloat32,
                                              rank_ - 1, comm_, stream_.stream);
  if (r != nccl::kSuccess) {
    return fail(ErrorCode::kInternal, link + library_->error_text("ncclRecv", r));
  }
  return wait_stream(link);
}

Status NcclTransport::wait_stream(const std::string& link) {
  const auto start = Clock::now();
  while (stream_.done) {
    auto done = stream_.done();
    if (!done.ok()) return fail(done.error().code, link + done.error().message);
    if (*done) break;
    nccl::Result async = nccl::kSuccess;
    const nccl::Result r = library_->api().comm_get_async_error(comm_, &async);
    if (r != nccl::kSuccess || async != nccl::kSuccess) {
      return fail(
          ErrorCode::kInternal,
          link + library_->error_text("ncclCommGetAsyncError", r != nccl::kSuccess ? r : async));
    }
    const auto waited = Clock::now() - start;
    if (waited >= step_timeout_) {
      return fail(ErrorCode::kIo, link + "the NCCL transfer did not complete within " +
                                      seconds(step_timeout_) + " s (--rank-timeout)");
    }
    if (waited < kSpin) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(kPollSleep);
    }
  }
  return {};
}

}  // namespace novaserve
