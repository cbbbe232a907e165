// A test-only stand-in for libnccl.so.2 (built as libfake_nccl.so when tests are on; point
// NOVASERVE_NCCL_LIB at it). It implements the entry points NcclTransport resolves
// (src/runtime/pipeline/nccl_abi.h) over Unix-domain sockets between the ranks, which may be
// processes or threads of one process. It tests the wiring of the multi-process pipeline (who
// sends what to whom, in which order, and the error paths), NOT NCCL: buffers are host memory,
// streams are ignored, and nothing here says anything about real NCCL on GPUs (issue 18 runs
// that on two GPUs).
//
// Behaviour, modelled on NCCL's host-side semantics:
// - ncclGetUniqueId: a random token; the id is "FAKENCCL" and the token.
// - ncclCommInitRank: collective, as NCCL's: each rank listens on the abstract socket
//   "novaserve-fake-nccl-<token>-<rank>"; ranks 1.. connect to rank 0, which answers once all
//   have, so every rank returns only when the whole world has called it.
// - ncclSend: copies the buffer into a queue and returns (a writer thread per peer delivers it,
//   as NCCL's own threads would, so a sender never waits for its receiver). Only ncclFloat32.
// - ncclRecv: blocks until the peer's next message is there and copies it. A message of another
//   size is ncclInvalidUsage (real NCCL does not check this).
// - Failures: a peer that closed its connection is ncclRemoteError; nothing for
//   NOVASERVE_FAKE_NCCL_TIMEOUT_S seconds (default 60) is ncclSystemError; a writer's failure
//   is reported by ncclCommGetAsyncError and by later ncclSend calls.
// - ncclCommAbort closes everything (a blocked peer then sees ncclRemoteError).
// - ncclGetVersion reports 0 ("0.0.0"), so logs show the fake was used.
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "runtime/pipeline/nccl_abi.h"

namespace {

namespace nccl = novaserve::nccl;
using Clock = std::chrono::steady_clock;

constexpr char kMagic[8] = {'F', 'A', 'K', 'E', 'N', 'C', 'C', 'L'};
// The first 8 bytes on a connection: what it is for, and the connecting rank.
constexpr uint32_t kBarrier = 1;
constexpr uint32_t kData = 2;

Clock::time_point deadline() {
  const char* env = std::getenv("NOVASERVE_FAKE_NCCL_TIMEOUT_S");
  const double s = env != nullptr ? std::atof(env) : 60.0;
  return Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(s * 1000.0));
}

int ms_left(Clock::time_point until) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now());
  return ms.count() < 0 ? 0 : static_cast<int>(std::min<int64_t>(ms.count(), 1 << 30));
}

// Waits until `fd` is readable (or writable); false at the deadline.
bool wait_fd(int fd, short events, Clock::time_point until) {
  for (;;) {
    pollfd p{fd, events, 0};
    const int n = ::poll(&p, 1, ms_left(until));
    if (n > 0) return true;
    if (n == 0 || errno != EINTR) return false;
  }
}

// Reads exactly n bytes. kSuccess, kRemoteError (closed), kSystemError (timeout, error).
nccl::Result read_full(int fd, void* dst, size_t n, Clock::time_point until) {
  auto* p = static_cast<uint8_t*>(dst);
  while (n > 0) {
    if (!wait_fd(fd, POLLIN, until)) return nccl::kSystemError;
    const ssize_t got = ::recv(fd, p, n, 0);
    if (got == 0) return nccl::kRemoteError;
    if (got < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return errno == ECONNRESET ? nccl::kRemoteError : nccl::kSystemError;
    }
    p += got;
    n -= static_cast<size_t>(got);
  }
  return nccl::kSuccess;
}

nccl::Result write_full(int fd, const void* src, size_t n) {
  const auto* p = static_cast<const uint8_t*>(src);
  while (n > 0) {
    const ssize_t put = ::send(fd, p, n, MSG_NOSIGNAL);
    if (put < 0) {
      if (errno == EINTR) continue;
      return errno == EPIPE || errno == ECONNRESET ? nccl::kRemoteError : nccl::kSystemError;
    }
    p += put;
    n -= static_cast<size_t>(put);
  }
  return nccl::kSuccess;
}

sockaddr_un address(uint64_t token, int rank, socklen_t& len) {
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  const std::string name =
      "novaserve-fake-nccl-" + std::to_string(token) + "-" + std::to_string(rank);
  // Abstract namespace: a leading NUL, no file to clean up.
  std::memcpy(a.sun_path + 1, name.data(), name.size());
  len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  return a;
}

// Connects to `rank`'s listener, retrying while it does not exist yet (until `until`, or until
// *stop), and sends the tag.
int connect_to(uint64_t token, int rank, uint32_t kind, int me, Clock::time_point until,
               const std::atomic<bool>* stop = nullptr) {
  socklen_t len = 0;
  const sockaddr_un a = address(token, rank, len);
  while (Clock::now() < until && (stop == nullptr || !stop->load())) {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&a), len) == 0) {
      const uint32_t tag[2] = {kind, static_cast<uint32_t>(me)};
      if (write_full(fd, tag, sizeof tag) == nccl::kSuccess) return fd;
    }
    ::close(fd);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return -1;
}

// One outgoing link: a queue of messages and the thread that writes them.
struct Writer {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::vector<uint8_t>> queue;
  std::atomic<bool> stop{false};
  std::atomic<int> fd{-1};
  std::thread thread;
};

}  // namespace

namespace novaserve::nccl {
struct CommHandle {
  uint64_t token = 0;
  int rank = 0;
  int world = 0;
  int listener = -1;
  std::map<int, int> incoming;  // peer rank -> connection it sends on
  std::map<int, std::unique_ptr<Writer>> writers;
  std::atomic<int> async_error{kSuccess};
};
}  // namespace novaserve::nccl

namespace {

using Comm = nccl::Comm;

void writer_loop(Comm c, int peer, Writer* w) {
  w->fd = connect_to(c->token, peer, kData, c->rank, deadline(), &w->stop);
  for (;;) {
    std::vector<uint8_t> message;
    {
      std::unique_lock<std::mutex> lock(w->mu);
      w->cv.wait(lock, [w] { return w->stop || !w->queue.empty(); });
      if (w->stop) return;
      message = std::move(w->queue.front());
      w->queue.pop_front();
    }
    const uint64_t size = message.size();
    const int fd = w->fd;
    nccl::Result r = fd < 0 ? nccl::kSystemError : write_full(fd, &size, sizeof size);
    if (r == nccl::kSuccess) r = write_full(fd, message.data(), message.size());
    if (r != nccl::kSuccess) {
      int expected = nccl::kSuccess;
      c->async_error.compare_exchange_strong(expected, r);
      return;
    }
  }
}

// Accepts one connection and reads its tag; -1 at the deadline.
int accept_tagged(int listener, uint32_t tag[2], Clock::time_point until) {
  if (!wait_fd(listener, POLLIN, until)) return -1;
  const int fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
  if (fd < 0) return -1;
  if (read_full(fd, tag, 2 * sizeof(uint32_t), until) != nccl::kSuccess) {
    ::close(fd);
    return -1;
  }
  return fd;
}

void close_all(Comm c) {
  for (auto& [peer, w] : c->writers) {
    {
      std::lock_guard<std::mutex> lock(w->mu);
      w->stop = true;
    }
    w->cv.notify_all();
    if (const int fd = w->fd; fd >= 0) ::shutdown(fd, SHUT_RDWR);
    if (w->thread.joinable()) w->thread.join();
    if (const int fd = w->fd; fd >= 0) ::close(fd);
  }
  for (auto& [peer, fd] : c->incoming) ::close(fd);
  if (c->listener >= 0) ::close(c->listener);
  delete c;
}

// Rank 0 waits for every other rank's barrier connection, then lets them all go.
nccl::Result barrier(Comm c) {
  const auto until = deadline();
  if (c->rank != 0) {
    const int fd = connect_to(c->token, 0, kBarrier, c->rank, until);
    if (fd < 0) return nccl::kSystemError;
    uint8_t go = 0;
    const nccl::Result r = read_full(fd, &go, 1, until);
    ::close(fd);
    return r;
  }
  std::vector<int> waiting;
  while (static_cast<int>(waiting.size()) < c->world - 1) {
    uint32_t tag[2] = {0, 0};
    const int fd = accept_tagged(c->listener, tag, until);
    if (fd < 0) break;
    if (tag[0] == kBarrier) {
      waiting.push_back(fd);
    } else {
      c->incoming[static_cast<int>(tag[1])] = fd;  // a peer that is already sending
    }
  }
  nccl::Result r =
      static_cast<int>(waiting.size()) == c->world - 1 ? nccl::kSuccess : nccl::kSystemError;
  for (const int fd : waiting) {
    const uint8_t go = 1;
    if (r == nccl::kSuccess) r = write_full(fd, &go, 1);
    ::close(fd);
  }
  return r;
}

}  // namespace

extern "C" {

nccl::Result ncclGetVersion(int* version) {
  if (version == nullptr) return nccl::kInvalidArgument;
  *version = 0;
  return nccl::kSuccess;
}

nccl::Result ncclGetUniqueId(nccl::UniqueId* id) {
  if (id == nullptr) return nccl::kInvalidArgument;
  std::random_device rd;
  const uint64_t token =
      (static_cast<uint64_t>(rd()) << 32) ^ rd() ^ static_cast<uint64_t>(::getpid());
  std::memset(id->internal, 0, sizeof id->internal);
  std::memcpy(id->internal, kMagic, sizeof kMagic);
  std::memcpy(id->internal + sizeof kMagic, &token, sizeof token);
  return nccl::kSuccess;
}

nccl::Result ncclCommInitRank(nccl::Comm* comm, int nranks, nccl::UniqueId id, int rank) {
  if (comm == nullptr || nranks < 1 || rank < 0 || rank >= nranks ||
      std::memcmp(id.internal, kMagic, sizeof kMagic) != 0) {
    return nccl::kInvalidArgument;
  }
  auto* c = new nccl::CommHandle();
  std::memcpy(&c->token, id.internal + sizeof kMagic, sizeof c->token);
  c->rank = rank;
  c->world = nranks;
  socklen_t len = 0;
  const sockaddr_un a = address(c->token, rank, len);
  c->listener = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (c->listener < 0 || ::bind(c->listener, reinterpret_cast<const sockaddr*>(&a), len) != 0 ||
      ::listen(c->listener, 64) != 0) {
    close_all(c);
    return nccl::kSystemError;  // another rank of this id took the name: a duplicate rank
  }
  if (const nccl::Result r = barrier(c); r != nccl::kSuccess) {
    close_all(c);
    return r;
  }
  *comm = c;
  return nccl::kSuccess;
}

nccl::Result ncclCommAbort(nccl::Comm comm) {
  if (comm == nullptr) return nccl::kInvalidArgument;
  close_all(comm);
  return nccl::kSuccess;
}

nccl::Result ncclCommGetAsyncError(nccl::Comm comm, nccl::Result* async_error) {
  if (comm == nullptr || async_error == nullptr) return nccl::kInvalidArgument;
  *async_error = static_cast<nccl::Result>(comm->async_error.load());
  return nccl::kSuccess;
}

nccl::Result ncclSend(const void* sendbuff, size_t count, nccl::DataType type, int peer,
                      nccl::Comm comm, nccl::Stream) {
  if (comm == nullptr || type != nccl::kFloat32 || peer < 0 || peer >= comm->world ||
      peer == comm->rank || (sendbuff == nullptr && count > 0)) {
    return nccl::kInvalidArgument;
  }
  if (const int e = comm->async_error.load(); e != nccl::kSuccess) {
    return static_cast<nccl::Result>(e);
  }
  std::unique_ptr<Writer>& w = comm->writers[peer];
  if (!w) {
    w = std::make_unique<Writer>();
    w->thread = std::thread(writer_loop, comm, peer, w.get());
  }
  const auto* p = static_cast<const uint8_t*>(sendbuff);
  {
    std::lock_guard<std::mutex> lock(w->mu);
    w->queue.emplace_back(p, p + count * sizeof(float));
  }
  w->cv.notify_all();
  return nccl::kSuccess;
}

nccl::Result ncclRecv(void* recvbuff, size_t count, nccl::DataType type, int peer, nccl::Comm comm,
                      nccl::Stream) {
  if (comm == nullptr || type != nccl::kFloat32 || peer < 0 || peer >= comm->world ||
      peer == comm->rank || (recvbuff == nullptr && count > 0)) {
    return nccl::kInvalidArgument;
  }
  const auto until = deadline();
  while (comm->incoming.count(peer) == 0) {
    uint32_t tag[2] = {0, 0};
    const int fd = accept_tagged(comm->listener, tag, until);
    if (fd < 0) return nccl::kSystemError;
    if (tag[0] != kData) {
      ::close(fd);
      continue;
    }
    comm->incoming[static_cast<int>(tag[1])] = fd;
  }
  const int fd = comm->incoming[peer];
  uint64_t size = 0;
  if (const nccl::Result r = read_full(fd, &size, sizeof size, until); r != nccl::kSuccess) {
    return r;
  }
  if (size != count * sizeof(float)) return nccl::kInvalidUsage;
  return read_full(fd, recvbuff, size, until);
}

const char* ncclGetErrorString(nccl::Result result) {
  switch (result) {
    case nccl::kSuccess:
      return "no error";
    case nccl::kSystemError:
      return "unhandled system error (fake NCCL: a timeout or a socket error)";
    case nccl::kInvalidArgument:
      return "invalid argument";
    case nccl::kInvalidUsage:
      return "invalid usage (fake NCCL: the send and the recv sizes differ)";
    case nccl::kRemoteError:
      return "remote process exited or there was a network error";
    default:
      return "fake NCCL: unexpected result";
  }
}

}  // extern "C"
