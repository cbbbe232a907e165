// How many file descriptors `novaserve serve` needs: the rule that doctor's os.nofile-low checks
// and deploy/systemd/novaserve.service's LimitNOFILE follows.
#pragma once

#include <cstdint>

namespace novaserve::doctor {

/// Descriptors the server holds besides client sockets: the listening socket, epoll and eventfds
/// of the I/O threads, stdio, the model file, the GPU driver's device nodes (CUDA opens
/// /dev/nvidia* once per device plus a few internal fds), and idle keep-alive connections that
/// hold no request. 256 covers these with room to spare.
constexpr int64_t kOpenFilesMargin = 256;

/// Every request waiting for a slot (--max-queued-requests) and every running sequence
/// (--max-num-seqs) holds one client socket, so: queued + running + kOpenFilesMargin. With
/// serve's defaults (1024 + 32) that is 1312. Below it, accept(2) fails with EMFILE under load
/// and clients see resets instead of the server's own 503.
constexpr int64_t required_open_files(int64_t max_queued_requests, int64_t max_num_seqs) {
  return max_queued_requests + max_num_seqs + kOpenFilesMargin;
}

}  // namespace novaserve::doctor
